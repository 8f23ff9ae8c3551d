"""Which lorebook entries activate this turn: SillyTavern 1.12.6's scan, pure and fast.

`activate(...)` is `checkWorldInfo` (algo-world-info.md §4) as a function: the books in
play, the visible messages, the settings and the timer state go in; the activated
entries (in activation order and placed by position), the new timer state, the new
variables and a trace that explains every entry's fate come out. The scan's state lives in
`scan`, its timers in `timers`, the placing of what it activated in `placement`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from functools import partial
from math import nan
from types import MappingProxyType

from taverna.engine.lorebook.groups import GroupMember, filter_groups
from taverna.engine.lorebook.index import compile_book
from taverna.engine.lorebook.inputs import BookInPlay, BookSource, CharacterIdentity, ScanMessage
from taverna.engine.lorebook.placement import ActivatedEntry
from taverna.engine.lorebook.reasons import (
    ACTIVATE_DECORATOR,
    ACTIVATED,
    AFTER_BUDGET,
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
from taverna.engine.lorebook.regex_budget import RegexBudget
from taverna.engine.lorebook.results import Activation
from taverna.engine.lorebook.scan import (
    MAX_SCAN_DEPTH,
    EntryRef,
    Scan,
    ScannedBook,
    ScanState,
    with_variables,
)
from taverna.engine.lorebook.timers import TimerRecords, check_timers, is_delayed
from taverna.engine.macros import MacroContext, evaluate
from taverna.model.lorebook import (
    CharacterStrategy,
    EntryOutcome,
    Reason,
    SelectiveLogic,
    TimedEffects,
    WorldInfoSettings,
)


def _ordered_books(
    books: Sequence[BookInPlay], strategy: CharacterStrategy
) -> tuple[list[tuple[BookInPlay, int]], list[tuple[BookInPlay, str]]]:
    """Books with their tier (§1): chat, persona, then global/character by strategy.

    Returns the books kept and the books dropped as duplicates (a book already in play
    through a stronger link is not loaded twice).
    """
    precedence = [
        BookSource.GLOBAL,
        BookSource.CHAT,
        BookSource.PERSONA,
        BookSource.CHARACTER,
        BookSource.EMBEDDED,
    ]
    seen: dict[str, BookSource] = {}
    kept: list[BookInPlay] = []
    dropped: list[tuple[BookInPlay, str]] = []
    for source in precedence:
        for played in books:
            if played.source is not source:
                continue
            name = played.book.name
            if name in seen:
                dropped.append((played, f"already in play as {seen[name]} lore"))
                continue
            seen[name] = source
            kept.append(played)
    if strategy is CharacterStrategy.CHARACTER_FIRST:
        tiers = {BookSource.CHARACTER: 2, BookSource.EMBEDDED: 2, BookSource.GLOBAL: 3}
    elif strategy is CharacterStrategy.GLOBAL_FIRST:
        tiers = {BookSource.GLOBAL: 2, BookSource.CHARACTER: 3, BookSource.EMBEDDED: 3}
    else:
        tiers = {BookSource.GLOBAL: 2, BookSource.CHARACTER: 2, BookSource.EMBEDDED: 2}
    tiers[BookSource.CHAT] = 0
    tiers[BookSource.PERSONA] = 1
    # Within a tier, books keep SillyTavern's concatenation order: global books in
    # selection order before character books, the primary character book first.
    concatenation = [BookSource.CHAT, BookSource.PERSONA, BookSource.GLOBAL]
    concatenation += [BookSource.CHARACTER, BookSource.EMBEDDED]
    ordered = sorted(kept, key=lambda p: concatenation.index(p.source))
    return [(played, tiers[played.source]) for played in ordered], dropped


def activate(
    books: Sequence[BookInPlay],
    messages: Sequence[ScanMessage],
    *,
    max_context: int,
    count_tokens: Callable[[str], int],
    settings: WorldInfoSettings | None = None,
    timers: TimedEffects | None = None,
    injections: Sequence[str] = (),
    character: CharacterIdentity | None = None,
    macros: MacroContext | None = None,
    seed: int = 0,
    forced: Collection[tuple[str, int]] = (),
    dry_run: bool = False,
    earlier: int = 0,
    regexes: RegexBudget | None = None,
) -> Activation:
    """Run SillyTavern's world info scan for one turn.

    - `books`: every lorebook in play and how it got there; the order among books of
      the same source is their selection order.
    - `messages`: the visible chat, oldest first, as the model will see it (hidden
      messages removed; on a swipe the message being replaced removed). Their number is
      the timer clock.
    - `max_context`: the prompt budget (context size minus response length); the scan
      may spend `settings.budget_percent` of it, counted by `count_tokens`.
    - `timers`: the path's sticky/cooldown records; the result carries the new ones.
    - `injections`: prompts flagged for scanning (Author's Note with "allow WI scan",
      persona description at depth, quiet prompt...), already macro-expanded.
    - `character`: for character filters. `macros`: expands keys and contents; its
      variables are threaded through contents and returned.
    - `seed`: drives probability rolls and group draws. `forced`: `(book, uid)` pairs
      activated from outside (a vector search). `dry_run`: prompt previews and token
      counts, which neither read nor write timers (§4.1). `earlier`: visible messages
      older than `messages` that were left out (a long chat given by its end); they
      count on the timer clock all the same. `regexes`: the turn's time for user regex
      keys (a new `RegexBudget` when not given); a key a time limit stops counts as no
      match, and its entry's trace says so.
    """
    settings = settings or WorldInfoSettings()
    character = character or CharacterIdentity()
    timers = timers or TimedEffects()
    ordered, dropped = _ordered_books(books, settings.character_strategy)
    slots: list[ScannedBook] = []
    tier_sequence: dict[int, int] = {}
    for played, tier in ordered:
        compiled = compile_book(
            played.book,
            case_sensitive=settings.case_sensitive,
            whole_words=settings.match_whole_words,
            boundaries=settings.boundaries,
        )
        sequence = tier_sequence.get(tier, 0)
        tier_sequence[tier] = sequence + 1
        slots.append(ScannedBook(played=played, compiled=compiled, tier=tier, sequence=sequence))

    names = settings.include_names
    recent = messages[-MAX_SCAN_DEPTH:]  # the scan buffer holds at most 1000 messages
    newest_first = [
        (f"{m.name}: {m.text}" if names and m.name is not None else m.text).strip()
        for m in reversed(recent)
    ]
    scan = Scan(
        slots,
        newest_first,
        [text for text in injections if text],
        settings,
        count_tokens,
        character,
        macros,
        seed,
        forced,
        dry_run,
        regexes,
    )
    clock = earlier + len(messages)
    budget = settings.budget_for(max_context)
    records = TimerRecords(timers)
    if not dry_run:
        check_timers(scan, records, clock)

    result = _run(scan, budget, clock)
    activated, overflowed, loops = result
    if not dry_run:
        for slot, index in activated:
            records.start(slots[slot].compiled.entries[index], clock)

    out: list[ActivatedEntry] = []
    for ref, loop in activated.items():
        slot, index = ref
        item = slots[slot].compiled.entries[index]
        out.append(
            ActivatedEntry(
                book=item.book,
                source=slots[slot].played.source,
                entry=item.entry,
                content=scan.contents.get(ref, item.content),
                loop=loop,
                sticky=ref in scan.sticky,
            )
        )
    return Activation(
        entries=tuple(out),
        timers=records.freeze(),
        variables=scan.variables,
        budget=budget,
        overflowed=overflowed,
        loops=loops,
        trace_records=MappingProxyType(scan.trace),
        books=tuple(played for played, _ in ordered),
        skipped_books=tuple(dropped),
    )


def _run(scan: Scan, budget: int, clock: int) -> tuple[dict[EntryRef, int], bool, int]:
    """The scan loop (§4.2); returns activated refs (in order, with their pass)."""
    settings = scan.settings
    activated: dict[EntryRef, int] = {}
    failed: set[EntryRef] = set()
    all_text = ""
    overflowed = False
    count = 0
    if not any(book.compiled.entries for book in scan.books):
        return activated, overflowed, count
    levels = sorted(set().union(*(book.compiled.delay_levels for book in scan.books)))
    current_level = levels.pop(0) if levels else 0
    state = ScanState.INITIAL

    rank_cache: dict[EntryRef, tuple[int, float, int, int]] = {}

    def rank(ref: EntryRef) -> tuple[int, float, int, int]:
        value = rank_cache.get(ref)
        if value is None:
            book = scan.books[ref[0]]
            item = book.compiled.entries[ref[1]]
            value = (book.tier, -item.order, book.sequence, item.loaded)
            rank_cache[ref] = value
        return value

    forced_refs: set[EntryRef] = set()
    for slot, book in enumerate(scan.books):
        for name, uid in scan.forced:
            if name == book.compiled.book.name and uid in book.compiled.by_uid:
                forced_refs.add((slot, book.compiled.by_uid[uid]))

    while state is not ScanState.NONE:
        if settings.max_recursion_steps and settings.max_recursion_steps <= count:
            break
        count += 1
        next_state = ScanState.NONE
        candidates: set[EntryRef] = set(scan.sticky) | forced_refs
        for slot, book in enumerate(scan.books):
            candidates.update((slot, index) for index in book.candidates)
            candidates.update((slot, index) for index in book.compiled.always)
        found_now: list[EntryRef] = []
        for ref in sorted(candidates, key=rank):
            if ref in failed or ref in activated:
                continue
            if _consider(scan, ref, state, current_level, clock, count, ref in forced_refs):
                found_now.append(ref)
        found_now.sort(key=lambda ref: (0 if ref in scan.sticky else 1, rank(ref)))

        # tokenizers.js getTokenCountAsync: an empty text counts 0 without asking
        text_tokens = scan.count_tokens(all_text) if all_text else 0
        new_entries = found_now
        if any(scan.books[r[0]].compiled.entries[r[1]].groups for r in found_now):
            kept, removed = filter_groups(
                [_member(scan, ref, clock) for ref in found_now],
                earlier_group_fields=[
                    scan.books[r[0]].compiled.entries[r[1]].entry.group for r in activated
                ],
                scoring=settings.use_group_scoring,
                score=partial(scan.score, state=state),
                random=scan.random,
            )
            for removal in removed:
                scan.note(removal.ref, EntryOutcome.GROUP, removal.reason, count)
            new_entries = [member.ref for member in kept]

        new_content = ""
        stopped_at: int | None = None
        for position, ref in enumerate(new_entries):
            slot, index = ref
            item = scan.books[slot].compiled.entries[index]
            entry = item.entry
            roll: float | None = None
            # A file entry with useProbability but no probability compares against
            # undefined in SillyTavern and never passes its roll.
            chance = float(entry.probability) if "probability" not in entry.missing else nan
            if entry.use_probability and chance != 100 and ref not in scan.sticky:
                roll = scan.random() * 100
                if not roll <= chance:
                    failed.add(ref)
                    scan.note(
                        ref,
                        EntryOutcome.PROBABILITY,
                        Reason("probability", {"roll": f"{roll:.1f}", "chance": f"{chance:g}"}),
                        count,
                        roll=roll,
                    )
                    continue
            content = scan.contents.get(ref, item.content)
            if scan.macros is not None:
                context = scan.macros
                if context.variables is not scan.variables:
                    context = with_variables(context, scan.variables)
                expanded = evaluate(content, context)
                content = expanded.text
                scan.variables = expanded.variables
            scan.contents[ref] = content
            new_content += content + "\n"
            if text_tokens + scan.count_tokens(new_content) >= budget:
                overflowed = True
                stopped_at = position
                scan.note(
                    ref,
                    EntryOutcome.BUDGET,
                    Reason("budget", {"budget": budget}),
                    count,
                    roll=roll,
                )
                break
            activated[ref] = count
            previous = scan.trace.get((item.book, entry.uid))
            if previous is not None and previous[0] is EntryOutcome.ACTIVATED:
                scan.trace[(item.book, entry.uid)] = (*previous[:5], roll, previous[6])
            else:
                scan.note(ref, EntryOutcome.ACTIVATED, ACTIVATED, count, roll=roll)
        if stopped_at is not None:
            for ref in new_entries[stopped_at + 1 :]:
                if ref not in failed:
                    scan.note(ref, EntryOutcome.NOT_REACHED, AFTER_BUDGET, count)

        successful = [ref for ref in new_entries if ref not in failed]
        for_recursion = [
            ref
            for ref in successful
            if not scan.books[ref[0]].compiled.entries[ref[1]].entry.prevent_recursion
        ]
        if settings.recursive and not overflowed and for_recursion:
            next_state = ScanState.RECURSION
        if (
            settings.recursive
            and not overflowed
            and state is ScanState.MIN_ACTIVATIONS
            and scan.recursion
        ):
            next_state = ScanState.RECURSION
        if (
            next_state is ScanState.NONE
            and not overflowed
            and settings.min_activations > 0
            and len(activated) < settings.min_activations
        ):
            depth = settings.depth + scan.skew
            over_max = (
                settings.min_activations_depth_max > 0
                and depth > settings.min_activations_depth_max
            ) or depth > clock
            if not over_max:
                next_state = ScanState.MIN_ACTIVATIONS
                scan.skew += 1
                scan.haystacks.clear()
                scan.ensure_messages(settings.depth + scan.skew)
        if next_state is ScanState.NONE and levels:
            # §4.2 step 9: delayed levels get their pass even without recursion or budget
            next_state = ScanState.RECURSION
            current_level = levels.pop(0)
        state = next_state
        if state is not ScanState.NONE:
            text = "\n".join(
                scan.contents.get(ref, scan.books[ref[0]].compiled.entries[ref[1]].content)
                for ref in for_recursion
            )
            scan.add_recursion(text)
            all_text = text + "\n" + all_text
    return activated, overflowed, count


def _member(scan: Scan, ref: EntryRef, clock: int) -> GroupMember[EntryRef]:
    item = scan.books[ref[0]].compiled.entries[ref[1]]
    entry = item.entry
    weight = entry.group_weight if entry.group_weight is not None else 100
    return GroupMember(
        ref=ref,
        group_field=entry.group,
        groups=item.groups,
        order=item.order,
        override=entry.group_override,
        weight=float(weight),
        use_scoring=entry.use_group_scoring,
        sticky=ref in scan.sticky,
        cooldown=ref in scan.cooldown,
        delayed=is_delayed(scan, entry, clock),
    )


def _consider(
    scan: Scan,
    ref: EntryRef,
    state: ScanState,
    level: int,
    clock: int,
    loop: int,
    forced: bool,
) -> bool:
    """SillyTavern's per-entry checks, in its order (§4.2 step 3)."""
    slot, index = ref
    item = scan.books[slot].compiled.entries[index]
    entry = item.entry
    note = scan.note
    if entry.disable:
        note(ref, EntryOutcome.DISABLED, DISABLED, loop)
        return False
    flt = entry.character_filter
    if flt is not None and flt.names:
        included = scan.character.file_name in flt.names
        if included if flt.is_exclude else not included:
            note(ref, EntryOutcome.CHARACTER_FILTER, CHARACTER_FILTER, loop)
            return False
    if flt is not None and flt.tags and scan.character.tags is not None:
        has_tag = any(tag in flt.tags for tag in scan.character.tags)
        if has_tag if flt.is_exclude else not has_tag:
            note(ref, EntryOutcome.TAG_FILTER, TAG_FILTER, loop)
            return False
    sticky = ref in scan.sticky
    if is_delayed(scan, entry, clock):
        note(ref, EntryOutcome.DELAY, Reason("delay", {"n": entry.delay or 0}), loop)
        return False
    if ref in scan.cooldown and not sticky:
        note(ref, EntryOutcome.COOLDOWN, ON_COOLDOWN, loop)
        return False
    if state is not ScanState.RECURSION and entry.delay_level and not sticky:
        note(ref, EntryOutcome.DELAY_UNTIL_RECURSION, WAITS_RECURSION, loop)
        return False
    if state is ScanState.RECURSION and entry.delay_level > level and not sticky:
        note(
            ref,
            EntryOutcome.DELAY_UNTIL_RECURSION,
            Reason("waits_level", {"level": entry.delay_level, "now": level}),
            loop,
        )
        return False
    if (
        state is ScanState.RECURSION
        and scan.settings.recursive
        and entry.exclude_recursion
        and not sticky
    ):
        note(ref, EntryOutcome.EXCLUDE_RECURSION, EXCLUDE_RECURSION, loop)
        return False
    if "@@activate" in item.decorators:
        note(ref, EntryOutcome.ACTIVATED, ACTIVATE_DECORATOR, loop)
        return True
    if "@@dont_activate" in item.decorators:
        note(ref, EntryOutcome.DONT_ACTIVATE, DONT_ACTIVATE_DECORATOR, loop)
        return False
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
        note(
            ref, EntryOutcome.NO_MATCH, NO_PRIMARY_KEY_STOPPED if stopped else NO_PRIMARY_KEY, loop
        )
        return False
    if not (entry.selective and entry.keysecondary):
        note(
            ref,
            EntryOutcome.ACTIVATED,
            Reason("primary_key", {"key": primary}),
            loop,
            primary_key=primary,
        )
        return True
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
        note(
            ref,
            EntryOutcome.SECONDARY,
            Reason("secondary_fail", params),
            loop,
            primary_key=primary,
            secondary_keys=tuple(found),
        )
        return False
    note(
        ref,
        EntryOutcome.ACTIVATED,
        Reason("secondary_pass", {"key": primary, "logic": label}),
        loop,
        primary_key=primary,
        secondary_keys=tuple(found),
    )
    return True
