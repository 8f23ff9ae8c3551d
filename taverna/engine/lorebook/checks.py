"""Whether one candidate entry activates in a scan pass, and why (algo-world-info.md §4.2 step 3).

SillyTavern checks a candidate in a fixed order: its filters, its timers and delays, its
decorators and the reasons it needs no key, then its primary and secondary keys. The
first check that decides notes the entry's fate in the scan's trace.
"""

from __future__ import annotations

from taverna.engine.lorebook.index import CompiledEntry
from taverna.engine.lorebook.reasons import (
    ACTIVATE_DECORATOR,
    CHARACTER_FILTER,
    CONSTANT,
    DISABLED,
    DONT_ACTIVATE_DECORATOR,
    EXCLUDE_RECURSION,
    FORCED,
    NO_PRIMARY_KEY,
    NO_PRIMARY_KEY_STOPPED,
    NO_PRIMARY_KEYS,
    ON_COOLDOWN,
    STICKY,
    TAG_FILTER,
    WAITS_RECURSION,
)
from taverna.engine.lorebook.scan import EntryRef, Scan, ScanState
from taverna.engine.lorebook.timers import is_delayed
from taverna.model.lorebook import Entry, EntryOutcome, Reason, SelectiveLogic

__all__ = ["consider"]


def consider(
    scan: Scan,
    ref: EntryRef,
    state: ScanState,
    level: int,
    clock: int,
    loop: int,
    forced: bool,
) -> bool:
    """SillyTavern's per-entry checks, in its order: True when the entry activates."""
    item = scan.books[ref[0]].compiled.entries[ref[1]]
    entry = item.entry
    if entry.disable:
        scan.note(ref, EntryOutcome.DISABLED, DISABLED, loop)
        return False
    if entry.character_filter is not None and _filtered_out(scan, ref, entry, loop):
        return False
    sticky = ref in scan.sticky
    if _waits(scan, ref, entry, state, level, clock, loop, sticky):
        return False
    decided = _decided_without_keys(scan, ref, item, loop, forced, sticky)
    if decided is not None:
        return decided
    return _keys_match(scan, ref, item, state, loop)


def _filtered_out(scan: Scan, ref: EntryRef, entry: Entry, loop: int) -> bool:
    """The character and tag filters (a filter with no names or tags lets all through)."""
    flt = entry.character_filter
    assert flt is not None
    if flt.names:
        included = scan.character.file_name in flt.names
        if included if flt.is_exclude else not included:
            scan.note(ref, EntryOutcome.CHARACTER_FILTER, CHARACTER_FILTER, loop)
            return True
    if flt.tags and scan.character.tags is not None:
        has_tag = any(tag in flt.tags for tag in scan.character.tags)
        if has_tag if flt.is_exclude else not has_tag:
            scan.note(ref, EntryOutcome.TAG_FILTER, TAG_FILTER, loop)
            return True
    return False


def _waits(
    scan: Scan,
    ref: EntryRef,
    entry: Entry,
    state: ScanState,
    level: int,
    clock: int,
    loop: int,
    sticky: bool,
) -> bool:
    """Timers and recursion rules that hold the entry back in this pass."""
    note = scan.note
    if is_delayed(scan, entry, clock):
        note(ref, EntryOutcome.DELAY, Reason("delay", {"n": entry.delay or 0}), loop)
        return True
    if sticky:
        return False
    if ref in scan.cooldown:
        note(ref, EntryOutcome.COOLDOWN, ON_COOLDOWN, loop)
        return True
    if state is not ScanState.RECURSION:
        if entry.delay_level:
            note(ref, EntryOutcome.DELAY_UNTIL_RECURSION, WAITS_RECURSION, loop)
            return True
        return False
    if entry.delay_level > level:
        note(
            ref,
            EntryOutcome.DELAY_UNTIL_RECURSION,
            Reason("waits_level", {"level": entry.delay_level, "now": level}),
            loop,
        )
        return True
    if scan.settings.recursive and entry.exclude_recursion:
        note(ref, EntryOutcome.EXCLUDE_RECURSION, EXCLUDE_RECURSION, loop)
        return True
    return False


def _decided_without_keys(
    scan: Scan, ref: EntryRef, item: CompiledEntry, loop: int, forced: bool, sticky: bool
) -> bool | None:
    """Decorators, constants, entries forced from outside and sticky ones; None: ask the keys."""
    note = scan.note
    if "@@activate" in item.decorators:
        note(ref, EntryOutcome.ACTIVATED, ACTIVATE_DECORATOR, loop)
        return True
    if "@@dont_activate" in item.decorators:
        note(ref, EntryOutcome.DONT_ACTIVATE, DONT_ACTIVATE_DECORATOR, loop)
        return False
    entry = item.entry
    if entry.constant:
        note(ref, EntryOutcome.ACTIVATED, CONSTANT, loop)
        return True
    if forced:
        why = scan.forced_reasons.get((item.book, entry.uid))
        note(ref, EntryOutcome.ACTIVATED, why or FORCED, loop)
        return True
    if sticky:
        note(ref, EntryOutcome.ACTIVATED, STICKY, loop)
        return True
    if not entry.key:
        note(ref, EntryOutcome.NO_KEYS, NO_PRIMARY_KEYS, loop)
        return False
    return None


def _keys_match(
    scan: Scan, ref: EntryRef, item: CompiledEntry, state: ScanState, loop: int
) -> bool:
    """The primary keys (any one), then the secondary keys by the entry's logic (§3)."""
    slot = ref[0]
    entry = item.entry
    primary = next(
        (
            entry.key[i]
            for i, key_id in enumerate(item.primary)
            if scan.key_found(slot, item, key_id, state)
        ),
        None,
    )
    if primary is None:
        stopped = scan.stopped_keys(slot, item.primary)
        reason = NO_PRIMARY_KEY_STOPPED if stopped else NO_PRIMARY_KEY
        scan.note(ref, EntryOutcome.NO_MATCH, reason, loop)
        return False
    if not (entry.selective and entry.keysecondary):
        scan.note(
            ref,
            EntryOutcome.ACTIVATED,
            Reason("primary_key", {"key": primary}),
            loop,
            primary_key=primary,
        )
        return True
    return _secondary_match(scan, ref, item, primary, state, loop)


def _secondary_match(
    scan: Scan, ref: EntryRef, item: CompiledEntry, primary: str, state: ScanState, loop: int
) -> bool:
    """The secondary keys under AND ANY, NOT ALL, NOT ANY or AND ALL."""
    slot = ref[0]
    entry = item.entry
    logic = entry.selective_logic
    found: list[str] = []
    missing: list[str] = []
    passed = False
    for raw, key_id in zip(entry.keysecondary, item.secondary, strict=True):
        hit = scan.key_found(slot, item, key_id, state)
        (found if hit else missing).append(raw)
        if logic is SelectiveLogic.AND_ANY and hit:
            passed = True
            break
        if logic is SelectiveLogic.NOT_ALL and not hit:
            passed = True
            break
    else:
        if logic is SelectiveLogic.NOT_ANY and not found:
            passed = True
        if logic is SelectiveLogic.AND_ALL and not missing:
            passed = True
    label = logic.name.replace("_", " ")
    if not passed:
        params: dict[str, str | int] = {"key": primary, "logic": label}
        if scan.stopped_keys(slot, item.secondary):
            params["stopped"] = 1
        scan.note(
            ref,
            EntryOutcome.SECONDARY,
            Reason("secondary_fail", params),
            loop,
            primary_key=primary,
            secondary_keys=tuple(found),
        )
        return False
    scan.note(
        ref,
        EntryOutcome.ACTIVATED,
        Reason("secondary_pass", {"key": primary, "logic": label}),
        loop,
        primary_key=primary,
        secondary_keys=tuple(found),
    )
    return True
