"""Recall by meaning: old messages of the path placed back in the prompt (SillyTavern's
Vector Storage chat memories, algo-chat-ops.md §4).

The service finds the messages nearest in meaning to the end of the chat (on the active
path only, none hidden or deleted) and hands them here best first with their scores.
The service offers only messages older than the oldest one the history holds; assembly
keeps up to `insert` of them within the recall's own token budget, and places them as one extension prompt
(`3_vectors`) with the template, most relevant last. Each considered message is a
ledger line with its score, and a cut one says why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from taverna.engine.assembly.context import AssemblyContext
from taverna.engine.assembly.injections import VECTORS_KEY, Injection
from taverna.model.injection import ExtensionPosition, InjectionRole
from taverna.model.prompt import LedgerItem

DEFAULT_TEMPLATE = "Past events:\n{{text}}"
RECALLED_KIND = "recalled_message"


@dataclass(frozen=True, slots=True)
class RecallSettings:
    """How recalled messages are placed (SillyTavern `extension_settings.vectors` names).

    `budget`: the tokens the recalled block may use (0: no limit of its own besides
    `insert`).
    """

    template: str = DEFAULT_TEMPLATE
    position: ExtensionPosition = ExtensionPosition.IN_PROMPT
    depth: int = 2
    role: InjectionRole = InjectionRole.SYSTEM
    insert: int = 3
    budget: int = 400
    include_wi: bool = False
    # Messages less similar than this stay out. (SillyTavern 1.12.6 means to do the same but
    # loses the filter on the way, algo-chat-ops.md §4 step 2; here it holds.)
    score_threshold: float = 0.25


@dataclass(frozen=True, slots=True)
class RecalledMessage:
    """A message of the active path found near in meaning to the chat's end."""

    id: str
    name: str
    text: str
    score: float


@dataclass(frozen=True, slots=True)
class RecallInput:
    """What the recall service found for this turn.

    `messages`: best first. `entry_scores`: lorebook entries marked vectorized that are
    near enough to activate, by `(book, uid)`, with their similarity.
    """

    settings: RecallSettings = RecallSettings()
    messages: tuple[RecalledMessage, ...] = ()
    entry_scores: Mapping[tuple[str, int], float] = field(default_factory=dict)


def recalled_line(message: RecalledMessage) -> str:
    """One recalled message as SillyTavern writes it: `name: text`, newlines collapsed."""
    text = " ".join(message.text.split())
    return f"{message.name}: {text}".strip() if message.name else text


def recall_injection(
    context: AssemblyContext, count_text: Callable[[str], int]
) -> tuple[Injection | None, tuple[LedgerItem, ...]]:
    """The recalled block for this turn (or none) and one ledger line per message considered."""
    recall = context.recall
    if recall is None or not recall.messages:
        return None, ()
    settings = recall.settings
    chosen: list[tuple[RecalledMessage, str, int]] = []
    notes: list[LedgerItem] = []
    used = 0
    for message in recall.messages:
        line = recalled_line(message)
        score = f"{message.score:.3f}"
        if not line:
            continue
        tokens = count_text(line)
        if message.score < settings.score_threshold:
            notes.append(
                LedgerItem(
                    RECALLED_KIND,
                    message.id,
                    tokens,
                    False,
                    text=line,
                    code="recall_below",
                    params={"score": score, "threshold": f"{settings.score_threshold:g}"},
                )
            )
            continue
        if len(chosen) >= settings.insert:
            notes.append(
                LedgerItem(
                    RECALLED_KIND,
                    message.id,
                    tokens,
                    False,
                    text=line,
                    code="recall_past",
                    params={"score": score, "insert": settings.insert},
                )
            )
            continue
        if settings.budget and used + tokens > settings.budget:
            notes.append(
                LedgerItem(
                    RECALLED_KIND,
                    message.id,
                    tokens,
                    False,
                    text=line,
                    code="recall_over_budget",
                    params={"score": score, "budget": settings.budget},
                )
            )
            continue
        used += tokens
        chosen.append((message, line, tokens))
    if not chosen:
        return None, tuple(notes)
    # algo-chat-ops.md §4 step 4: the most relevant goes last.
    ordered = sorted(chosen, key=lambda item: item[0].score)
    text = settings.template.replace("{{text}}", "\n\n".join(line for _, line, _ in ordered))
    placed = [
        LedgerItem(
            RECALLED_KIND,
            m.id,
            tokens,
            True,
            text=line,
            code="recall_score",
            params={"score": f"{m.score:.3f}"},
        )
        for m, line, tokens in ordered
    ]
    injection = Injection(
        VECTORS_KEY,
        text,
        settings.position,
        settings.depth,
        settings.role,
        scan=settings.include_wi,
        kind="recall",
        source="recall",  # the messages it holds are ledger lines of their own
    )
    return injection, (*placed, *notes)
