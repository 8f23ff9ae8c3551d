"""What a lorebook scan gives back: the activation and the trace of every entry's fate."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from taverna.engine.lorebook.inputs import BookInPlay
from taverna.engine.lorebook.placement import ActivatedEntry, Placement, place
from taverna.engine.lorebook.reasons import DISABLED, NO_PRIMARY_KEY, NO_PRIMARY_KEYS
from taverna.engine.macros import Variables
from taverna.model.lorebook import EntryOutcome, EntryTrace, Reason, TimedEffects

# (outcome, reason, loop, primary key, secondary keys, roll, comment, keys of an untitled entry)
TraceNote = tuple[
    EntryOutcome, Reason, int, str | None, tuple[str, ...], float | None, str, tuple[str, ...]
]


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
    keys: tuple[str, ...] = (),
    found_in: Mapping[str, str | int] | None = None,
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
        keys=keys if not comment.strip() else (),
        found_in=found_in or {},
    )


def entry_title(entry: ActivatedEntry) -> str:
    """An entry as a person knows it: its title, else its keys, else its number."""
    return entry.entry.comment.strip() or ", ".join(entry.entry.key) or f"#{entry.uid}"


def recursion_source(
    entries: tuple[ActivatedEntry, ...], loop: int, key: str | None
) -> dict[str, str | int] | None:
    """The entry activated before pass `loop` whose text holds `key`: where a key found by
    recursion came from (the recursion buffer is those entries' texts)."""
    if loop <= 1 or not key:
        return None
    wanted = key.casefold()
    for entry in entries:
        held = entry.loop < loop and not entry.entry.prevent_recursion
        if held and wanted in entry.content.casefold():
            return {"book": entry.book, "uid": entry.uid, "title": entry_title(entry)}
    return None


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
            outcome, reason, loop, primary, secondary, roll, comment, keys = note
            found_in = (
                recursion_source(self.entries, loop, primary)
                if outcome is EntryOutcome.ACTIVATED
                else None
            )
            yield _record(
                book, uid, comment, outcome, reason, loop, primary, secondary, roll, keys, found_in
            )

    def trace(self) -> Iterator[EntryTrace]:
        """A record for every entry of every book in play, in book and file order."""
        for played in self.books:
            for entry in played.book.entries:
                note = self.trace_records.get((played.book.name, entry.uid))
                record: EntryTrace
                if note is not None:
                    outcome, reason, loop, primary, secondary, roll, _comment, _keys = note
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
                        tuple(entry.key),
                        recursion_source(self.entries, loop, primary)
                        if outcome is EntryOutcome.ACTIVATED
                        else None,
                    )
                else:
                    if entry.disable:
                        record = _record(
                            played.book.name,
                            entry.uid,
                            entry.comment,
                            EntryOutcome.DISABLED,
                            DISABLED,
                            keys=tuple(entry.key),
                        )
                    elif not entry.key and not entry.constant:
                        record = _record(
                            played.book.name,
                            entry.uid,
                            entry.comment,
                            EntryOutcome.NO_KEYS,
                            NO_PRIMARY_KEYS,
                            keys=tuple(entry.key),
                        )
                    else:
                        record = _record(
                            played.book.name,
                            entry.uid,
                            entry.comment,
                            EntryOutcome.NO_MATCH,
                            NO_PRIMARY_KEY,
                            keys=tuple(entry.key),
                        )
                yield record
