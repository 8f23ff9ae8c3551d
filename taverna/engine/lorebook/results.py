"""What a lorebook scan gives back: the activation and the trace of every entry's fate."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from taverna.engine.lorebook.inputs import BookInPlay
from taverna.engine.lorebook.placement import ActivatedEntry, Placement, place
from taverna.engine.macros import Variables
from taverna.model.lorebook import EntryOutcome, EntryTrace, TimedEffects

# (outcome, reason, loop, primary key, secondary keys, roll, comment)
TraceNote = tuple[EntryOutcome, str, int, str | None, tuple[str, ...], float | None, str]


@dataclass(frozen=True, slots=True)
class Activation:
    """The result of one scan."""

    entries: tuple[ActivatedEntry, ...]
    timers: TimedEffects
    variables: Variables
    budget: int
    overflowed: bool
    loops: int
    trace_records: Mapping[tuple[str, int], TraceNote]  # internal; read `decisions()`/`trace()`
    books: tuple[BookInPlay, ...]
    skipped_books: tuple[tuple[BookInPlay, str], ...] = ()  # a book given twice, and why

    def placed(self, transform: Callable[[ActivatedEntry], str] | None = None) -> Placement:
        """Arrange the entries by position (§9).

        `transform` gives the text to place for an entry (the assembly runs the
        WORLD_INFO regex scripts here); entries whose text is empty are dropped.
        """
        return place(self.entries, transform)

    def decisions(self) -> Iterator[EntryTrace]:
        """The entries the scan made a decision about (looked at beyond "no key found").

        Cheap enough for every turn; `trace()` adds the untouched entries.
        """
        for (book, uid), note in self.trace_records.items():
            outcome, reason, loop, primary, secondary, roll, comment = note
            yield EntryTrace(book, uid, comment, outcome, reason, loop, primary, secondary, roll)

    def trace(self) -> Iterator[EntryTrace]:
        """A record for every entry of every book in play, in book and file order."""
        for played in self.books:
            for entry in played.book.entries:
                note = self.trace_records.get((played.book.name, entry.uid))
                record: EntryTrace
                if note is not None:
                    outcome, reason, loop, primary, secondary, roll, _comment = note
                    record = EntryTrace(
                        played.book.name,
                        entry.uid,
                        entry.comment,
                        outcome,
                        reason,
                        loop,
                        primary,
                        secondary,
                        roll,
                    )
                else:
                    if entry.disable:
                        record = EntryTrace(
                            played.book.name,
                            entry.uid,
                            entry.comment,
                            EntryOutcome.DISABLED,
                            "disabled",
                        )
                    elif not entry.key and not entry.constant:
                        record = EntryTrace(
                            played.book.name,
                            entry.uid,
                            entry.comment,
                            EntryOutcome.NO_KEYS,
                            "has no primary keys",
                        )
                    else:
                        record = EntryTrace(
                            played.book.name,
                            entry.uid,
                            entry.comment,
                            EntryOutcome.NO_MATCH,
                            "no primary key found in the scanned text",
                        )
                yield record
