"""What assembly asks of the lorebook engine, and what it gets back.

Assembly decides which lorebooks apply and when the scan runs (after the author's
note and persona are registered, algo-prompt-assembly.md §1 step 16); the lorebook
engine decides which entries activate. This module is the seam between the two.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from taverna.engine.assembly.context import AssemblyContext, ChatMessage
from taverna.engine.lorebook import ActivatedEntry, BookInPlay, BookSource, DepthGroup
from taverna.engine.lorebook.regex_budget import RegexBudget
from taverna.model.lorebook import EntryTrace


@dataclass(frozen=True, slots=True)
class ScanRequest:
    """Everything one lorebook scan reads.

    `messages` are the visible messages, oldest first; `injected` the extension prompts marked
    scannable; `budget_context` the prompt budget the lorebook share is taken from;
    `books` the applying books with why each applies, in SillyTavern's scan order.
    """

    context: AssemblyContext
    messages: Sequence[ChatMessage]
    injected: tuple[str, ...]
    budget_context: int
    books: tuple[BookInPlay, ...]
    count_text: Callable[[str], int]
    # Prompt-time regex for an entry's content and its depth (None unless @depth).
    regex: Callable[[str, int | None], str] | None = None
    # The chat variables macros left before the scan (None: the chat's recorded ones).
    variables: Mapping[str, Any] | None = None
    # The turn's time for user regexes, shared with the regex scripts (None: a new one).
    regexes: RegexBudget | None = None


@dataclass(frozen=True, slots=True)
class WorldInfoOutcome:
    """The activated lorebook text by place, the entries and their @depth groups as the
    lorebook engine placed them, plus the trace."""

    before: str = ""
    after: str = ""
    examples_before: tuple[str, ...] = ()
    examples_after: tuple[str, ...] = ()
    depth_groups: tuple[DepthGroup, ...] = ()
    an_top: tuple[str, ...] = ()
    an_bottom: tuple[str, ...] = ()
    entries: tuple[ActivatedEntry, ...] = ()
    trace: tuple[EntryTrace, ...] = ()  # the entries the scan decided about
    books: tuple[str, ...] = ()  # the names of the books scanned, in scan order
    timers: Mapping[str, Any] | None = None  # the lorebook timers to record after this turn
    variables: Mapping[str, Any] | None = None  # chat variables after macros in entries


LorebookScan = Callable[[ScanRequest], WorldInfoOutcome]


def no_lorebooks(request: ScanRequest) -> WorldInfoOutcome:
    """A scan that activates nothing (no lorebook engine, or no books)."""
    return WorldInfoOutcome()


def applying_books(context: AssemblyContext) -> tuple[BookInPlay, ...]:
    """The books that apply this turn, each once, with why it applies.

    algo-world-info.md §1: the global selection; the character's linked and extra
    books unless selected globally or bound to the chat; the chat's book unless
    selected globally. A persona's book (newer SillyTavern) comes last, once. A
    linked book that is not available applies nothing, as in SillyTavern (a card's
    embedded book is used only once imported as a lorebook of its own).
    """
    chosen: list[tuple[str, BookSource]] = [
        (name, BookSource.GLOBAL) for name in context.world_info.global_select
    ]
    global_names = set(context.world_info.global_select)
    chat_book = context.metadata.lorebook
    speakers = context.characters[:1]
    for character in speakers:
        linked = [character.linked_lorebook, *character.extra_lorebooks]
        for name in linked:
            if name and name not in global_names and name != chat_book:
                chosen.append((name, BookSource.CHARACTER))
    if chat_book and chat_book not in global_names:
        chosen.append((chat_book, BookSource.CHAT))
    if context.persona.lorebook:
        chosen.append((context.persona.lorebook, BookSource.PERSONA))
    seen: set[str] = set()
    books: list[BookInPlay] = []
    for name, source in chosen:
        if name in seen:
            continue
        seen.add(name)
        book = context.lorebooks.get(name)
        if book is not None:
            books.append(BookInPlay(book, source))
    return tuple(books)
