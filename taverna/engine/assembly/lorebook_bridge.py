"""Assembly's lorebook scan, run by the project's lorebook engine.

Translates assembly's `ScanRequest` (the applying books, the chat as scanned, the
scannable injections, the prompt budget) into one `activate` call and its placement
back into what assembly places: the before/after texts, the author's note top and
bottom, the @depth groups, the example blocks, and the trace for the ledger.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import overload

from taverna.engine.assembly.context import AssemblyContext, ChatMessage
from taverna.engine.assembly.macros_bridge import macro_context
from taverna.engine.assembly.world import ScanRequest, WorldInfoOutcome
from taverna.engine.lorebook import (
    DEFAULT_DEPTH,
    CharacterIdentity,
    ScanMessage,
    activate,
)
from taverna.engine.macros import MacroContext, Variables
from taverna.model.lorebook import Position, Reason, TimedEffects


class _ScanView(Sequence[ScanMessage]):
    """The visible chat as the lorebook engine reads it, built per message on access.

    Not kept between turns: a view is one small object, cheaper to build again than a
    memo entry (its key, its value, its slot) is to keep and to look up.
    """

    def __init__(self, chat: Sequence[ChatMessage], include_names: bool) -> None:
        self.chat = chat
        self.include_names = include_names

    def __len__(self) -> int:
        return len(self.chat)

    @overload
    def __getitem__(self, index: int) -> ScanMessage: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[ScanMessage]: ...
    def __getitem__(self, index: int | slice) -> ScanMessage | Sequence[ScanMessage]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        message = self.chat[index]
        return ScanMessage(text=message.text, name=message.name if self.include_names else "")


def _macros(request: ScanRequest) -> MacroContext:
    """The macro context entries are expanded with, from the turn's current variables."""
    macros = macro_context(request.context)
    if request.variables is None:
        return macros
    local = dict(request.variables)
    return replace(macros, variables=Variables(local=local, global_=macros.variables.global_))


def _vector_hits(context: AssemblyContext) -> dict[tuple[str, int], Reason]:
    """Vectorized entries the recall service found near the chat's end, with their score."""
    recall = context.recall
    if recall is None:
        return {}
    return {
        ref: Reason("similarity", {"score": f"{score:.3f}"})
        for ref, score in recall.entry_scores.items()
    }


def scan(request: ScanRequest) -> WorldInfoOutcome:
    """Activate the applying books for this turn and place what fired.

    On a real generation the path's recorded timers (`timedWorldInfo`) are read as
    SillyTavern reads them and the new timers and variables come back for the caller
    to record on the new message; a dry run ignores timers and changes no state.
    """
    context = request.context
    books = request.books
    if not books:
        return WorldInfoOutcome()
    character = context.character if context.characters else None
    dry_run = context.dry_run
    recorded = None if dry_run else context.metadata.extras.get("timedWorldInfo")
    activation = activate(
        books,
        _ScanView(request.messages, context.world_info.include_names),
        max_context=request.budget_context,
        count_tokens=request.count_text,
        settings=context.world_info,
        timers=TimedEffects.from_json(recorded) if isinstance(recorded, dict) else None,
        injections=request.injected,
        character=CharacterIdentity(
            file_name=character.avatar.rsplit(".", 1)[0] if character and character.avatar else ""
        ),
        macros=_macros(request),
        seed=context.seed,
        forced=_vector_hits(context),
        dry_run=dry_run,
        earlier=context.earlier.visible,
        regexes=request.regexes,
    )
    regex = request.regex
    if regex is None:
        placement = activation.placed()
    else:
        # world-info.js: contents go through the WORLD_INFO regex, @depth ones with their depth.
        placement = activation.placed(
            lambda e: regex(
                e.content,
                (e.entry.depth if e.entry.depth is not None else DEFAULT_DEPTH)
                if e.entry.position is Position.AT_DEPTH
                else None,
            )
        )
    # The decisions only: entries that never matched need no explaining every turn
    # (`Activation.trace()` lists them all when a person asks).
    trace = tuple(activation.decisions())
    return WorldInfoOutcome(
        before="\n".join(placement.before),
        after="\n".join(placement.after),
        examples_before=tuple(t for p, t in placement.examples if p is Position.EM_TOP),
        examples_after=tuple(t for p, t in placement.examples if p is Position.EM_BOTTOM),
        depth_groups=placement.depth,
        an_top=placement.an_top,
        an_bottom=placement.an_bottom,
        entries=activation.entries,
        trace=trace,
        books=tuple(b.book.name for b in books),
        # A dry run records nothing: no state for the caller to write.
        timers=None if dry_run else activation.timers.to_json(),
        variables=None if dry_run else dict(activation.variables.local),
    )
