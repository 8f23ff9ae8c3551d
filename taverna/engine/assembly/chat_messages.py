"""The laid-out parts made the Chat Completion messages sent (algo-prompt-assembly.md §3.3).

Lorebook text and depth injections may move after the stable prefix for a provider's
cache, consecutive unnamed system messages may be squashed into one, and each part
becomes a `PromptMessage` once.
"""

from __future__ import annotations

import json
from typing import Any

from taverna.engine.assembly.budget import MessageCost
from taverna.engine.assembly.chat_layout import Part
from taverna.model.prompt import PromptMessage, Role

__all__ = ["as_message", "squash_system", "volatile_last"]

_ROLES = {role.value: role for role in Role}
_NEVER_SQUASHED = frozenset({"newMainChat", "newChat", "groupNudge"})


def volatile_last(parts: list[Part]) -> list[Part]:
    """Cache-friendly layout: lorebook text and depth injections after the stable prefix.

    They move, in their order, to just after the newest chat message, so that the
    prefix a provider caches stays the same while they change from turn to turn.
    """
    volatile = [p for p in parts if p.volatile]
    if not volatile:
        return parts
    stable = [p for p in parts if not p.volatile]
    last_history = max(
        (i for i, p in enumerate(stable) if p.kind in ("history", "separator")),
        default=len(stable) - 1,
    )
    merged = "\n".join(p.content for p in volatile)
    names = ",".join(p.identifier for p in volatile)
    moved = Part(
        "volatile",
        "system",
        merged,
        sum(p.tokens for p in volatile),
        kind="volatile",
        source=names,
        source_code="parts",
        source_params={"names": names},
    )
    return [*stable[: last_history + 1], moved, *stable[last_history + 1 :]]


def squash_system(parts: list[Part], cost: MessageCost) -> list[Part]:
    """Consecutive unnamed system messages merged (algo-prompt-assembly.md §3.3 step 9)."""
    out: list[Part] = []
    for part in parts:
        if part.role == "system" and not part.content:
            continue
        if _squashable(part) and out and _squashable(out[-1]):
            last = out[-1]
            content = last.content + "\n" + part.content
            source = f"{last.source}+{part.source}"
            merged = [*_merged_parts(last), *_merged_parts(part)]
            out[-1] = Part(
                last.identifier,
                last.role,
                content,
                cost.message(last.role, content),
                kind=last.kind,
                source=source,
                source_code="merged",
                source_params={"joined": source, "parts": json.dumps(merged, ensure_ascii=False)},
            )
        else:
            out.append(part)
    return out


def _squashable(part: Part) -> bool:
    return part.identifier not in _NEVER_SQUASHED and part.role == "system" and not part.name


def _merged_parts(part: Part) -> list[dict[str, Any]]:
    """The pieces of a merged message's source, each with its own code and values (a piece
    without a code is a slot's identifier or a name, kept as written)."""
    if part.source_code == "merged" and part.source_params:
        pieces: list[dict[str, Any]] = json.loads(str(part.source_params["parts"]))
        return pieces
    piece: dict[str, Any] = {"source": part.source or part.identifier}
    if part.source_code:
        piece.update(code=part.source_code, params=dict(part.source_params or {}))
    return [piece]


def as_message(part: Part) -> PromptMessage:
    """The message a part is sent as, made once and kept on the part."""
    if part.message is None:
        part.message = PromptMessage(
            _ROLES[part.role],
            part.content,
            part.name or None,
            source=part.identifier,
            images=part.images,
        )
    return part.message
