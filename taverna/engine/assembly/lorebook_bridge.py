"""Assembly's lorebook scan, run by the project's lorebook engine.

Translates assembly's `ScanRequest` (the applying books, the chat as scanned, the
scannable injections, the prompt budget) into one `activate` call and its placement
back into what assembly places: the before/after texts, the author's note top and
bottom, the @depth groups, the example blocks, and the trace for the ledger.
"""

from __future__ import annotations

from dataclasses import asdict

from taverna.engine.assembly.context import InjectionRole
from taverna.engine.assembly.injections import DepthGroup
from taverna.engine.assembly.macros_bridge import macro_context
from taverna.engine.assembly.world import ActivatedEntry, ScanRequest, WorldInfoOutcome
from taverna.engine.lorebook import (
    BookInPlay,
    BookSource,
    CharacterIdentity,
    ScanMessage,
    WorldInfoSettings,
    activate,
)
from taverna.model.lorebook import CharacterStrategy, Lorebook, Position

_SOURCES = {
    "global": BookSource.GLOBAL,
    "character": BookSource.CHARACTER,
    "chat": BookSource.CHAT,
    "persona": BookSource.PERSONA,
    "embedded": BookSource.EMBEDDED,
}
_PLACES = {
    Position.BEFORE: "before",
    Position.AFTER: "after",
    Position.AN_TOP: "an_top",
    Position.AN_BOTTOM: "an_bottom",
    Position.AT_DEPTH: "at_depth",
    Position.EM_TOP: "em_top",
    Position.EM_BOTTOM: "em_bottom",
    Position.OUTLET: "outlet",
}
DEFAULT_DEPTH = 4  # world-info.js DEFAULT_DEPTH


def _settings(request: ScanRequest) -> WorldInfoSettings:
    wi = request.context.world_info
    try:
        strategy = CharacterStrategy(wi.character_strategy)
    except ValueError:
        strategy = CharacterStrategy.EVENLY
    return WorldInfoSettings(
        depth=wi.depth,
        budget_percent=25 if wi.budget > 100 else wi.budget,
        budget_cap=wi.budget_cap,
        include_names=wi.include_names,
        recursive=wi.recursive,
        case_sensitive=wi.case_sensitive,
        match_whole_words=wi.match_whole_words,
        use_group_scoring=wi.use_group_scoring,
        character_strategy=strategy,
        min_activations=wi.min_activations,
        min_activations_depth_max=wi.min_activations_depth_max,
        max_recursion_steps=wi.max_recursion_steps,
    )


def scan(request: ScanRequest) -> WorldInfoOutcome:
    """Activate the applying books for this turn and place what fired."""
    context = request.context
    books = [
        BookInPlay(source.book, _SOURCES.get(source.kind, BookSource.GLOBAL))
        for source in request.books
        if isinstance(source.book, Lorebook)
    ]
    if not books:
        return WorldInfoOutcome()
    include_names = context.world_info.include_names
    # The request's chat is newest first and already "Name: text"; the engine wants
    # the messages oldest first with the name apart.
    visible = [m for m in context.visible_messages]
    chat_texts = list(reversed(request.chat))
    messages = (
        [
            ScanMessage(text=m.text, name=m.name if include_names else "")
            for m in visible[-len(chat_texts) :]
        ]
        if chat_texts
        else []
    )
    character = context.character if context.characters else None
    activation = activate(
        books,
        messages,
        max_context=request.budget_context,
        count_tokens=request.count_text,
        settings=_settings(request),
        injections=request.injected,
        character=CharacterIdentity(
            file_name=character.avatar.rsplit(".", 1)[0] if character and character.avatar else ""
        ),
        macros=macro_context(context),
        seed=context.seed,
        dry_run=True,
    )
    placement = activation.placed()
    groups = tuple(
        DepthGroup(
            group.depth if group.depth is not None else DEFAULT_DEPTH,
            InjectionRole.parse(int(group.role)),
            group.contents,
            tuple(f"{e.book}/{e.entry.uid}" for e in group.entries),
        )
        for group in placement.depth
    )
    entries = tuple(
        ActivatedEntry(
            book=e.book,
            uid=e.entry.uid,
            text=e.content,
            position=_PLACES.get(e.entry.position, "none")
            if e.entry.position is not None
            else "none",
            depth=e.entry.depth if e.entry.position is Position.AT_DEPTH else None,
            tokens=request.count_text(e.content),
        )
        for e in activation.entries
    )
    trace = tuple(
        {k: (v.value if hasattr(v, "value") else v) for k, v in asdict(record).items()}
        for record in activation.trace()
    )
    return WorldInfoOutcome(
        before="\n".join(placement.before),
        after="\n".join(placement.after),
        examples_before=tuple(t for p, t in placement.examples if p is Position.EM_TOP),
        examples_after=tuple(t for p, t in placement.examples if p is Position.EM_BOTTOM),
        depth_groups=groups,
        an_top=placement.an_top,
        an_bottom=placement.an_bottom,
        entries=entries,
        trace=trace,
    )
