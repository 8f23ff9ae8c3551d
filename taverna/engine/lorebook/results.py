"""What a lorebook scan gives back: the activation and the trace of every entry's fate."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from taverna.engine.lorebook.inputs import BookInPlay
from taverna.engine.lorebook.placement import ActivatedEntry, Placement, place
from taverna.engine.lorebook.reasons import DISABLED, NO_PRIMARY_KEY, NO_PRIMARY_KEYS
from taverna.engine.macros import Variables
from taverna.model.lorebook import EntryOutcome, EntryTrace, Reason, TimedEffects

# (outcome, reason, loop, primary key, secondary keys, roll, comment)
TraceNote = tuple[EntryOutcome, Reason, int, str | None, tuple[str, ...], float | None, str]


def _record(
    book: str,
    uid: int,
    comment: str,
    outcome: EntryOutcome,
    reason: Reason,
    loop: int = 0,
    primary: str | None = None,
    secondary: tuple[str, ...] = (),
    roll: float | None = None,
) -> EntryTrace:
    """A trace record with the reason in English and by its code."""
    return EntryTrace(
        book,
        uid,
        comment,
        outcome,
        reason.text,
        loop,
        primary,
        secondary,
        roll,
        code=reason.code,
        params=reason.params,
    )


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
            yield _record(book, uid, comment, outcome, reason, loop, primary, secondary, roll)

    def trace(self) -> Iterator[EntryTrace]:
        """A record for every entry of every book in play, in book and file order."""
        for played in self.books:
            for entry in played.book.entries:
                note = self.trace_records.get((played.book.name, entry.uid))
                record: EntryTrace
                if note is not None:
                    outcome, reason, loop, primary, secondary, roll, _comment = note
                    record = _record(
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
                        record = _record(
                            played.book.name,
                            entry.uid,
                            entry.comment,
                            EntryOutcome.DISABLED,
                            DISABLED,
                        )
                    elif not entry.key and not entry.constant:
                        record = _record(
                            played.book.name,
                            entry.uid,
                            entry.comment,
                            EntryOutcome.NO_KEYS,
                            NO_PRIMARY_KEYS,
                        )
                    else:
                        record = _record(
                            played.book.name,
                            entry.uid,
                            entry.comment,
                            EntryOutcome.NO_MATCH,
                            NO_PRIMARY_KEY,
                        )
                yield record
