"""How much of a prompt a model server could reuse from the chat's last one, and where
the two first differ.

A server that keeps the computed prefix of the last prompt (llama.cpp, KoboldCpp, the
local model, a hosted prompt cache) computes a new prompt only from its first difference
on. The inspector says how much that is: for a reply, the tokens its server reported
reused (when it reports them) of the prompt's tokens, and for the next prompt an estimate
from the ledger; and for both, the part of the prompt where it first differs from the
prompt of the reply before it on the path (the last prompt this chat sent for that turn).

Everything is read from the stored records of sent prompts (`sent_prompts.py`): a record
holds each part's length in characters, so the difference is found on the text and named
by the ledger line that holds it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from taverna.model.chat import NodeRole
from taverna.services.chats import sent_prompts
from taverna.store.repository import Store

# How far up the path the previous reply with a record is looked for.
LOOK_BACK = 64


@dataclass(frozen=True, slots=True)
class PrefixReuse:
    """What the inspector says of a prompt's shared prefix.

    `reused` of `total` tokens were (`measured`: as the model server reported) or would be
    found computed; `part` is the current prompt's ledger line where it first differs
    from the previous one (None when it only grew at its end), `was` the previous one's.
    `shared_chars`: the characters both share from the start.
    """

    previous_reply: str
    identical: bool
    shared_chars: int
    reused: int
    total: int
    measured: bool
    part: Mapping[str, Any] | None
    was: Mapping[str, Any] | None
    at_end: bool = False  # the whole prompt is shared: it differs only past its end

    def to_json(self) -> dict[str, Any]:
        def line(item: Mapping[str, Any] | None) -> dict[str, Any] | None:
            if item is None:
                return None
            keys = ("kind", "source", "source_code", "source_params", "position")
            return {k: item.get(k) for k in keys}

        return {
            "previous_reply": self.previous_reply,
            "identical": self.identical,
            "shared_chars": self.shared_chars,
            "reused_tokens": self.reused,
            "total_tokens": self.total,
            "measured": self.measured,
            "part": line(self.part),
            "was": line(self.was),
            "at_end": self.at_end,
        }


def _positioned(prompt: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    items = prompt.get("ledger", {}).get("items", [])
    return sorted(
        (i for i in items if i.get("included") and i.get("position") is not None),
        key=lambda i: int(i["position"]),
    )


def _common(a: str, b: str) -> int:
    limit = min(len(a), len(b))
    index = 0
    while index < limit and a[index] == b[index]:
        index += 1
    return index


def _text_of(prompt: Mapping[str, Any]) -> str:
    """The prompt as one string: the text, or the messages' roles, names and contents."""
    if prompt.get("kind") == "text":
        return str(prompt.get("text") or "")
    return "".join(
        f"\x00{m.get('role')}\x00{m.get('name') or ''}\x00{m.get('content') or ''}"
        for m in prompt.get("messages", [])
    )


Span = tuple[int, int, Mapping[str, Any] | None]


def _spans(prompt: Mapping[str, Any]) -> list[Span]:
    """Each ledger line's [start, end) in `_text_of`, in order: a text prompt's parts where
    the record found them, a chat prompt's messages by the line placed at each."""
    items = prompt.get("ledger", {}).get("items", [])
    if prompt.get("kind") == "text":
        placed = [i for i in items if i.get("included") and i.get("at") is not None]
        return sorted(
            ((int(i["at"]), int(i["at"]) + int(i.get("chars") or 0), i) for i in placed),
            key=lambda span: span[0],
        )
    by_index = {int(i["position"]): i for i in _positioned(prompt)}
    spans: list[Span] = []
    start = 0
    for index, m in enumerate(prompt.get("messages", [])):
        length = (
            3 + len(str(m.get("role"))) + len(m.get("name") or "") + len(m.get("content") or "")
        )
        spans.append((start, start + length, by_index.get(index)))
        start += length
    return spans


def _at(spans: Sequence[Span], offset: int) -> Mapping[str, Any] | None:
    """The line holding `offset`; between two parts (a template's markers), the next one."""
    for _start, end, item in spans:
        if offset < end:
            return item
    return None


def estimated_reuse(prompt: Mapping[str, Any], shared_chars: int) -> int:
    """The prompt's tokens before `shared_chars`, from the ledger's counts (the tokens no
    part owns, such as a template's markers, in proportion)."""
    tokens = 0.0
    owned = 0
    for start, end, item in _spans(prompt):
        if item is None:
            continue
        count = int(item.get("tokens") or 0)
        owned += count
        if end <= shared_chars:
            tokens += count
        elif start < shared_chars:
            tokens += count * (shared_chars - start) / max(end - start, 1)
    total = int(prompt.get("ledger", {}).get("total_tokens") or 0)
    length = len(_text_of(prompt))
    if total > owned and length:
        tokens += (total - owned) * min(shared_chars / length, 1.0)
    return int(tokens)


def compare(
    previous: Mapping[str, Any],
    current: Mapping[str, Any],
    *,
    previous_reply: str = "",
    reported: tuple[int, int] | None = None,
) -> PrefixReuse:
    """Where `current` (a `prompt_json`) first differs from `previous`; `reported`: the
    (reused, total) tokens the model server reported for `current`."""
    old, new = _text_of(previous), _text_of(current)
    shared = _common(old, new)
    identical = shared == len(old) == len(new)
    part = _at(_spans(current), shared)
    was = _at(_spans(previous), shared)
    total = int(current.get("ledger", {}).get("total_tokens") or 0)
    if reported is not None:
        reused, total = reported
    else:
        reused = total if identical else min(estimated_reuse(current, shared), total)
    return PrefixReuse(
        previous_reply,
        identical,
        shared,
        reused,
        total,
        reported is not None,
        part,
        was,
        at_end=shared == len(new),
    )


def previous_record(
    store: Store, chat_id: str, below: str | None
) -> tuple[str, dict[str, Any]] | None:
    """The nearest reply above `below` on its path (the active path's end for None) that
    has a record of its prompt: its id and the record."""
    window = store.path_before(chat_id, below, limit=LOOK_BACK)
    for entry in reversed(window.entries):
        node = entry.node
        if node.role is not NodeRole.ASSISTANT or node.generation is None:
            continue
        data = store.sent_prompt(chat_id, node.id)
        if data is not None:
            return node.id, sent_prompts.decode(data)
    return None


def reuse_for(
    store: Store, chat_id: str, prompt: Mapping[str, Any], *, reply: str | None = None
) -> PrefixReuse | None:
    """The prefix `prompt` shares with the previous reply's prompt on the path: the next
    prompt's (`reply` None) or the prompt the reply `reply` was generated from."""
    found = previous_record(store, chat_id, reply)
    if found is None:
        return None
    previous_id, record = found
    reported = None
    if reply is not None:
        generation = store.get_node(chat_id, reply).generation
        extras = generation.extras if generation is not None else {}
        cached = extras.get("cached_tokens")
        total = generation.prompt_tokens if generation is not None else None
        if isinstance(cached, int) and isinstance(total, int):
            reported = (cached, total)
    return compare(record["prompt"], prompt, previous_reply=previous_id, reported=reported)
