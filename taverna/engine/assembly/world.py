"""What assembly asks of the lorebook engine, and what it gets back.

Assembly decides which lorebooks apply and when the scan runs (after the author's
note and persona are registered, algo-prompt-assembly.md §1 step 16); the lorebook
engine decides which entries activate. This module is the seam between the two.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from taverna.engine.assembly.context import AssemblyContext
from taverna.engine.assembly.injections import DepthGroup


@dataclass(frozen=True, slots=True)
class ActivatedEntry:
    """One lorebook entry that went into the prompt, for the ledger."""

    book: str
    uid: int | str
    text: str
    position: str  # before, after, an_top, an_bottom, at_depth, em_top, em_bottom
    depth: int | None = None
    tokens: int = 0


@dataclass(frozen=True, slots=True)
class BookSource:
    """One applying lorebook: its name, why it applies (chat, persona, character, global), the book."""

    name: str
    kind: str
    book: Any


@dataclass(frozen=True, slots=True)
class ScanRequest:
    """Everything one lorebook scan reads.

    `chat` is the scan text of each visible message, newest first (already
    `Name: text` when names are included); `injected` the extension prompts marked
    scannable; `budget_context` the prompt budget the lorebook share is taken from;
    `books` the applying books by name, in SillyTavern's scan order.
    """

    context: AssemblyContext
    chat: tuple[str, ...]
    injected: tuple[str, ...]
    budget_context: int
    books: tuple[BookSource, ...]
    count_text: Callable[[str], int]


@dataclass(frozen=True, slots=True)
class WorldInfoOutcome:
    """The activated lorebook text by place, plus the trace."""

    before: str = ""
    after: str = ""
    examples_before: tuple[str, ...] = ()
    examples_after: tuple[str, ...] = ()
    depth_groups: tuple[DepthGroup, ...] = ()
    an_top: tuple[str, ...] = ()
    an_bottom: tuple[str, ...] = ()
    entries: tuple[ActivatedEntry, ...] = ()
    trace: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)


LorebookScan = Callable[[ScanRequest], WorldInfoOutcome]


def no_lorebooks(request: ScanRequest) -> WorldInfoOutcome:
    """A scan that activates nothing (no lorebook engine, or no books)."""
    return WorldInfoOutcome()


def applying_books(context: AssemblyContext) -> tuple[BookSource, ...]:
    """The books that apply this turn, by name, without repeats.

    As SillyTavern gathers them (algo-world-info.md): the chat's book, the
    persona's book, the character's linked and extra books, then the global
    selection; a book named twice is scanned once. A card's embedded book is used
    when no book of the card's linked name is available.
    """
    names: list[tuple[str, str]] = []
    if context.metadata.lorebook:
        names.append((context.metadata.lorebook, "chat"))
    if context.persona.lorebook:
        names.append((context.persona.lorebook, "persona"))
    for character in context.characters[:1] if not context.is_group else context.characters:
        if character.linked_lorebook:
            names.append((character.linked_lorebook, "character"))
        names.extend((extra, "character") for extra in character.extra_lorebooks)
    names.extend((name, "global") for name in context.world_info.global_select)
    seen: set[str] = set()
    books: list[BookSource] = []
    for name, kind in names:
        if name in seen:
            continue
        seen.add(name)
        book = context.lorebooks.get(name)
        if book is None:
            for character in context.characters:
                if character.linked_lorebook == name and character.embedded_lorebook is not None:
                    book = character.embedded_lorebook
        if book is not None:
            books.append(BookSource(name, kind, book))
    return tuple(books)
