"""Lorebook timers during a scan: sticky and cooldown records, and delays (§7)."""

from __future__ import annotations

from types import MappingProxyType

from taverna.engine.lorebook.index import CompiledEntry
from taverna.engine.lorebook.scan import EntryRef, Scan
from taverna.model.lorebook import Entry, TimedEffect, TimedEffects


class TimerRecords:
    """Mutable copy of the timer records during one scan."""

    def __init__(self, timers: TimedEffects) -> None:
        self.sticky = dict(timers.sticky)
        self.cooldown = dict(timers.cooldown)

    def table(self, kind: str) -> dict[str, TimedEffect]:
        return self.sticky if kind == "sticky" else self.cooldown

    def start(self, item: CompiledEntry, clock: int) -> None:
        """Start the sticky and cooldown of an entry activated at `clock`, unless running."""
        for kind in ("sticky", "cooldown"):
            value = getattr(item.entry, kind)
            if value and item.key not in self.table(kind):
                self.table(kind)[item.key] = TimedEffect(
                    hash=item.hash, start=clock, end=clock + int(value), protected=False
                )

    def freeze(self) -> TimedEffects:
        return TimedEffects(
            sticky=MappingProxyType(dict(self.sticky)),
            cooldown=MappingProxyType(dict(self.cooldown)),
        )


def _find_ref(scan: Scan, record_key: str, record_hash: int) -> EntryRef | None:
    """The entry a timer record belongs to: same `<book>.<uid>` and same content hash."""
    for slot, book in enumerate(scan.books):
        prefix = book.compiled.book.name + "."
        if not record_key.startswith(prefix):
            continue
        uid_text = record_key[len(prefix) :]
        if not uid_text.lstrip("-").isdigit():
            continue
        index = book.compiled.by_uid.get(int(uid_text))
        if index is None:
            continue
        if book.compiled.entries[index].hash == record_hash:
            return (slot, index)
    return None


def check_timers(scan: Scan, records: TimerRecords, clock: int) -> None:
    """SillyTavern's `checkTimedEffects` at the start of a scan (§7.1)."""
    for kind in ("sticky", "cooldown"):
        table = records.table(kind)
        for key, record in list(table.items()):
            if clock <= record.start and not record.protected:
                del table[key]  # the chat did not advance (swipe, regenerate, deletion)
                continue
            ref = _find_ref(scan, key, record.hash)
            if ref is None:
                if clock >= record.end:
                    del table[key]
                continue
            item = scan.books[ref[0]].compiled.entries[ref[1]]
            if not getattr(item.entry, kind):
                del table[key]
                continue
            if clock >= record.end:
                del table[key]
                if kind == "sticky" and item.entry.cooldown:
                    # §7.1 step 4: an ended sticky starts a protected cooldown at once
                    records.cooldown[item.key] = TimedEffect(
                        hash=item.hash,
                        start=clock,
                        end=clock + int(item.entry.cooldown),
                        protected=True,
                    )
                    scan.cooldown.add(ref)
                continue
            (scan.sticky if kind == "sticky" else scan.cooldown).add(ref)


def is_delayed(scan: Scan, entry: Entry, clock: int) -> bool:
    return not scan.dry_run and bool(entry.delay) and clock < (entry.delay or 0)
