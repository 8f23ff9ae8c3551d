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

from taverna.engine.lorebook.checks import consider
from taverna.engine.lorebook.groups import GroupMember, filter_groups
from taverna.engine.lorebook.index import compile_book
from taverna.engine.lorebook.inputs import BookInPlay, BookSource, CharacterIdentity, ScanMessage
from taverna.engine.lorebook.placement import ActivatedEntry
from taverna.engine.lorebook.reasons import ACTIVATED, AFTER_BUDGET
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
    ordered, dropped = _ordered_books(books, settings.character_strategy)
    scan = Scan(
        _scanned_books(ordered, settings),
        _newest_first(messages, settings.include_names),
        [text for text in injections if text],
        settings,
        count_tokens,
        character or CharacterIdentity(),
        macros,
        seed,
        forced,
        dry_run,
        regexes,
    )
    clock = earlier + len(messages)
    budget = settings.budget_for(max_context)
    records = TimerRecords(timers or TimedEffects())
    if not dry_run:
        check_timers(scan, records, clock)

    activated, overflowed, loops = _run(scan, budget, clock)
    if not dry_run:
        for slot, index in activated:
            records.start(scan.books[slot].compiled.entries[index], clock)
    return Activation(
        entries=_activated_entries(scan, activated),
        timers=records.freeze(),
        variables=scan.variables,
        budget=budget,
        overflowed=overflowed,
        loops=loops,
        trace_records=MappingProxyType(scan.trace),
        books=tuple(played for played, _ in ordered),
        skipped_books=tuple(dropped),
    )


def _scanned_books(
    ordered: list[tuple[BookInPlay, int]], settings: WorldInfoSettings
) -> list[ScannedBook]:
    """Each book compiled for the settings' matching, numbered within its tier."""
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
    return slots


def _newest_first(messages: Sequence[ScanMessage], names: bool) -> list[str]:
    """The scan buffer's messages, newest first, with their speakers' names if asked (§2)."""
    recent = messages[-MAX_SCAN_DEPTH:]  # the scan buffer holds at most 1000 messages
    return [
        (f"{m.name}: {m.text}" if names and m.name is not None else m.text).strip()
        for m in reversed(recent)
    ]


def _activated_entries(scan: Scan, activated: dict[EntryRef, int]) -> tuple[ActivatedEntry, ...]:
    """The activated entries in activation order, with their expanded contents."""
    out: list[ActivatedEntry] = []
    for ref, loop in activated.items():
        book = scan.books[ref[0]]
        item = book.compiled.entries[ref[1]]
        out.append(
            ActivatedEntry(
                book=item.book,
                source=book.played.source,
                entry=item.entry,
                content=scan.contents.get(ref, item.content),
                loop=loop,
                sticky=ref in scan.sticky,
            )
        )
    return tuple(out)


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
    rank = _ranker(scan)
    forced_refs = _forced_refs(scan)

    while state is not ScanState.NONE:
        if settings.max_recursion_steps and settings.max_recursion_steps <= count:
            break
        count += 1
        found_now: list[EntryRef] = []
        for ref in sorted(_candidates(scan, forced_refs), key=rank):
            if ref in failed or ref in activated:
                continue
            if consider(scan, ref, state, current_level, clock, count, ref in forced_refs):
                found_now.append(ref)
        found_now.sort(key=lambda ref: (0 if ref in scan.sticky else 1, rank(ref)))

        # tokenizers.js getTokenCountAsync: an empty text counts 0 without asking
        text_tokens = scan.count_tokens(all_text) if all_text else 0
        new_entries = _after_groups(scan, found_now, activated, state, clock, count)
        if _admit(scan, new_entries, activated, failed, text_tokens, budget, count):
            overflowed = True

        for_recursion = [
            ref
            for ref in new_entries
            if ref not in failed
            and not scan.books[ref[0]].compiled.entries[ref[1]].entry.prevent_recursion
        ]
        state = _next_state(scan, state, overflowed, bool(for_recursion), len(activated), clock)
        if state is ScanState.NONE and levels:
            # §4.2 step 9: delayed levels get their pass even without recursion or budget
            state = ScanState.RECURSION
            current_level = levels.pop(0)
        if state is not ScanState.NONE:
            text = "\n".join(
                scan.contents.get(ref, scan.books[ref[0]].compiled.entries[ref[1]].content)
                for ref in for_recursion
            )
            scan.add_recursion(text)
            all_text = text + "\n" + all_text
    return activated, overflowed, count


def _ranker(scan: Scan) -> Callable[[EntryRef], tuple[int, float, int, int]]:
    """The sort key of candidates (tier, highest order first, book, load order), memoized."""
    rank_cache: dict[EntryRef, tuple[int, float, int, int]] = {}

    def rank(ref: EntryRef) -> tuple[int, float, int, int]:
        value = rank_cache.get(ref)
        if value is None:
            book = scan.books[ref[0]]
            item = book.compiled.entries[ref[1]]
            value = (book.tier, -item.order, book.sequence, item.loaded)
            rank_cache[ref] = value
        return value

    return rank


def _forced_refs(scan: Scan) -> set[EntryRef]:
    """The entries activated from outside (a vector search) that are in the books in play."""
    forced_refs: set[EntryRef] = set()
    for slot, book in enumerate(scan.books):
        for name, uid in scan.forced:
            if name == book.compiled.book.name and uid in book.compiled.by_uid:
                forced_refs.add((slot, book.compiled.by_uid[uid]))
    return forced_refs


def _candidates(scan: Scan, forced_refs: set[EntryRef]) -> set[EntryRef]:
    """Entries worth checking this pass: sticky, forced, always-on, or with a key seen."""
    candidates: set[EntryRef] = set(scan.sticky) | forced_refs
    for slot, book in enumerate(scan.books):
        candidates.update((slot, index) for index in book.candidates)
        candidates.update((slot, index) for index in book.compiled.always)
    return candidates


def _after_groups(
    scan: Scan,
    found_now: list[EntryRef],
    activated: dict[EntryRef, int],
    state: ScanState,
    clock: int,
    count: int,
) -> list[EntryRef]:
    """The pass's entries left by the inclusion group rules (§6); the removed are noted."""
    books = scan.books
    if not any(books[r[0]].compiled.entries[r[1]].groups for r in found_now):
        return found_now
    kept, removed = filter_groups(
        [_member(scan, ref, clock) for ref in found_now],
        earlier_group_fields=[books[r[0]].compiled.entries[r[1]].entry.group for r in activated],
        scoring=scan.settings.use_group_scoring,
        score=partial(scan.score, state=state),
        random=scan.random,
    )
    for removal in removed:
        scan.note(removal.ref, EntryOutcome.GROUP, removal.reason, count)
    return [member.ref for member in kept]


def _admit(
    scan: Scan,
    new_entries: list[EntryRef],
    activated: dict[EntryRef, int],
    failed: set[EntryRef],
    text_tokens: int,
    budget: int,
    count: int,
) -> bool:
    """Roll, expand and budget the pass's entries in order; True when the budget ran out.

    An entry that passes joins `activated`, one that fails its roll joins `failed`; the
    entry that overflows the budget and those after it are noted and left out.
    """
    new_content = ""
    for position, ref in enumerate(new_entries):
        item = scan.books[ref[0]].compiled.entries[ref[1]]
        entry = item.entry
        roll: float | None = None
        # A file entry with useProbability but no probability compares against
        # undefined in SillyTavern and never passes its roll.
        chance = float(entry.probability) if "probability" not in entry.missing else nan
        if entry.use_probability and chance != 100 and ref not in scan.sticky:
            roll = scan.random() * 100
            if not roll <= chance:
                failed.add(ref)
                reason = Reason("probability", {"roll": f"{roll:.1f}", "chance": f"{chance:g}"})
                scan.note(ref, EntryOutcome.PROBABILITY, reason, count, roll=roll)
                continue
        new_content += _expanded(scan, ref, item.content) + "\n"
        if text_tokens + scan.count_tokens(new_content) >= budget:
            reason = Reason("budget", {"budget": budget})
            scan.note(ref, EntryOutcome.BUDGET, reason, count, roll=roll)
            for later in new_entries[position + 1 :]:
                if later not in failed:
                    scan.note(later, EntryOutcome.NOT_REACHED, AFTER_BUDGET, count)
            return True
        activated[ref] = count
        previous = scan.trace.get((item.book, entry.uid))
        if previous is not None and previous[0] is EntryOutcome.ACTIVATED:
            scan.trace[(item.book, entry.uid)] = (*previous[:5], roll, *previous[6:])
        else:
            scan.note(ref, EntryOutcome.ACTIVATED, ACTIVATED, count, roll=roll)
    return False


def _expanded(scan: Scan, ref: EntryRef, compiled_content: str) -> str:
    """An entry's content with its macros expanded, threading the scan's variables."""
    content = scan.contents.get(ref, compiled_content)
    if scan.macros is not None:
        context = scan.macros
        if context.variables is not scan.variables:
            context = with_variables(context, scan.variables)
        expanded = evaluate(content, context)
        content = expanded.text
        scan.variables = expanded.variables
    scan.contents[ref] = content
    return content


def _next_state(
    scan: Scan,
    state: ScanState,
    overflowed: bool,
    recurse: bool,
    activated: int,
    clock: int,
) -> ScanState:
    """The kind of the next pass (§4.2 step 8): recursion, deeper for min activations, or none."""
    settings = scan.settings
    deeper = recurse or (state is ScanState.MIN_ACTIVATIONS and scan.recursion)
    if settings.recursive and not overflowed and deeper:
        return ScanState.RECURSION
    if overflowed or settings.min_activations <= 0 or activated >= settings.min_activations:
        return ScanState.NONE
    depth = settings.depth + scan.skew
    max_depth = settings.min_activations_depth_max
    if (max_depth > 0 and depth > max_depth) or depth > clock:
        return ScanState.NONE
    scan.skew += 1
    scan.haystacks.clear()
    scan.ensure_messages(settings.depth + scan.skew)
    return ScanState.MIN_ACTIVATIONS


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
