"""Which lorebook entries activate this turn: SillyTavern 1.12.6's scan, pure and fast.

`activate(...)` is `checkWorldInfo` (algo-world-info.md §4) as a function: the books in
play, the visible messages, the settings and the timer state go in; the activated
entries (in activation order and placed by position), the new timer state, the new
variables and a trace that explains every entry's fate come out.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from functools import partial
from math import nan
from types import MappingProxyType
from typing import Any

from taverna.engine.lorebook.groups import GroupMember, filter_groups
from taverna.engine.lorebook.index import CompiledBook, CompiledEntry, compile_book
from taverna.engine.lorebook.matching import (
    Boundaries,
    bounded,
    js_trim,
    match_key,
    word_runs,
)
from taverna.engine.macros import MacroContext, SeededRandom, Variables, evaluate, string_hash
from taverna.model.lorebook import (
    CharacterStrategy,
    Entry,
    EntryRole,
    Lorebook,
    Position,
    SelectiveLogic,
    TimedEffect,
    TimedEffects,
)

__all__ = [
    "ActivatedEntry",
    "Activation",
    "BookInPlay",
    "BookSource",
    "CharacterIdentity",
    "DepthGroup",
    "EntryTrace",
    "Outcome",
    "Placement",
    "ScanMessage",
    "WorldInfoSettings",
    "activate",
]

MAX_SCAN_DEPTH = 1000


class BookSource(StrEnum):
    """Why a lorebook is in play; decides its place in the scan order (§1)."""

    GLOBAL = "global"
    CHARACTER = "character"  # linked to the character (its primary or an additional book)
    EMBEDDED = "embedded"  # the card's own `character_book`, scanned as character lore
    CHAT = "chat"
    PERSONA = "persona"


@dataclass(frozen=True, slots=True)
class BookInPlay:
    """A lorebook and the link that brought it into this turn."""

    book: Lorebook
    source: BookSource


@dataclass(frozen=True, slots=True)
class ScanMessage:
    """One visible chat message as the scan sees it.

    `name` is prefixed (`Name: text`) when the settings include names; None means the
    text is already in its scanned form.
    """

    text: str
    name: str | None = ""


@dataclass(frozen=True, slots=True)
class CharacterIdentity:
    """The character the turn is for, as character filters name it.

    `file_name` is the avatar file stem; `tags` are tag ids, or None when the character
    has no tag list (then tag filters are not applied, as in SillyTavern).
    """

    file_name: str = ""
    tags: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class WorldInfoSettings:
    """SillyTavern's `world_info_*` settings (defaults: the code defaults, §0).

    `boundaries` chooses the whole-word rule: `UNICODE` (taverna's, CJK-aware) or
    `ASCII` (SillyTavern's exact JavaScript `\\W`).
    """

    depth: int = 2
    budget_percent: float = 25
    budget_cap: int = 0
    include_names: bool = True
    recursive: bool = False
    case_sensitive: bool = False
    match_whole_words: bool = False
    use_group_scoring: bool = False
    character_strategy: CharacterStrategy = CharacterStrategy.CHARACTER_FIRST
    min_activations: int = 0
    min_activations_depth_max: int = 0
    max_recursion_steps: int = 0
    boundaries: Boundaries = Boundaries.UNICODE

    @classmethod
    def from_sillytavern(
        cls, data: Mapping[str, Any], *, boundaries: Boundaries = Boundaries.UNICODE
    ) -> WorldInfoSettings:
        """From SillyTavern's `world_info_settings` object (missing keys keep defaults)."""

        def number(name: str, default: float) -> float:
            value = data.get(name, default)
            try:
                return float(value)
            except (TypeError, ValueError):
                return default

        budget = number("world_info_budget", 25)
        try:
            strategy = CharacterStrategy(int(number("world_info_character_strategy", 1)))
        except ValueError:
            strategy = CharacterStrategy.EVENLY  # §1 step 4: unknown values act as evenly
        return cls(
            depth=int(number("world_info_depth", 2)),
            budget_percent=25 if budget > 100 else budget,  # §0: values over 100 become 25
            budget_cap=int(number("world_info_budget_cap", 0)),
            include_names=bool(data.get("world_info_include_names", True)),
            recursive=bool(data.get("world_info_recursive", False)),
            case_sensitive=bool(data.get("world_info_case_sensitive", False)),
            match_whole_words=bool(data.get("world_info_match_whole_words", False)),
            use_group_scoring=bool(data.get("world_info_use_group_scoring", False)),
            character_strategy=strategy,
            min_activations=int(number("world_info_min_activations", 0)),
            min_activations_depth_max=int(number("world_info_min_activations_depth_max", 0)),
            max_recursion_steps=int(number("world_info_max_recursion_steps", 0)),
            boundaries=boundaries,
        )

    def budget_for(self, max_context: int) -> int:
        """Tokens the scan may spend: a share of the prompt budget, capped (§4.1 step 2)."""
        raw = self.budget_percent * max_context / 100
        budget = int(raw + 0.5) if raw >= 0 else -int(-raw + 0.5)  # JavaScript Math.round
        budget = budget or 1
        if self.budget_cap > 0 and budget > self.budget_cap:
            budget = self.budget_cap
        return budget


class Outcome(StrEnum):
    """What finally happened to an entry in one scan."""

    ACTIVATED = "activated"
    DISABLED = "disabled"
    CHARACTER_FILTER = "character filter"
    TAG_FILTER = "tag filter"
    DELAY = "delay"
    COOLDOWN = "cooldown"
    DELAY_UNTIL_RECURSION = "delay until recursion"
    EXCLUDE_RECURSION = "exclude recursion"
    DONT_ACTIVATE = "@@dont_activate"
    NO_KEYS = "no keys"
    NO_MATCH = "no match"
    SECONDARY = "secondary keys"
    GROUP = "inclusion group"
    PROBABILITY = "probability"
    BUDGET = "budget"
    NOT_REACHED = "not reached"


_Ref = tuple[int, int]  # (book slot, entry index)
# (outcome, reason, loop, primary key, secondary keys, roll, comment)
_Note = tuple[Outcome, str, int, str | None, tuple[str, ...], float | None, str]


@dataclass(frozen=True, slots=True)
class EntryTrace:
    """Why one entry fired or not, for the prompt inspector.

    `loop` is the scan pass (1 = first) of the last decision; `primary_key` the first
    primary key found; `secondary_keys` the secondary keys found; `roll` the probability
    roll (0-100) when one was made.
    """

    book: str
    uid: int
    comment: str
    outcome: Outcome
    reason: str
    loop: int = 0
    primary_key: str | None = None
    secondary_keys: tuple[str, ...] = ()
    roll: float | None = None


@dataclass(frozen=True, slots=True)
class ActivatedEntry:
    """An activated entry with its macro-expanded content and where it goes."""

    book: str
    source: BookSource
    entry: Entry
    content: str
    loop: int
    sticky: bool = False

    @property
    def uid(self) -> int:
        return self.entry.uid

    @property
    def position(self) -> Position | None:
        return self.entry.position

    @property
    def order(self) -> float:
        return float(self.entry.order) if "order" not in self.entry.missing else 100.0


@dataclass(frozen=True, slots=True)
class DepthGroup:
    """Entries injected together into the history: one message at `depth` as `role`.

    `depth` is None when the group's first entry has no depth (SillyTavern then loses
    the injection, §9.2).
    """

    depth: int | None
    role: EntryRole
    entries: tuple[ActivatedEntry, ...]
    contents: tuple[str, ...]

    @property
    def text(self) -> str:
        return "\n".join(self.contents)


@dataclass(frozen=True, slots=True)
class Placement:
    """Activated entries arranged per position, in SillyTavern's final order (§9).

    Lists are in ascending `order` with ties in reverse activation order. `examples`
    holds the example-message positions as (position, content) in SillyTavern's
    `EMEntries` order; `outlets` (a newer position) maps outlet names to their text.
    """

    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    an_top: tuple[str, ...] = ()
    an_bottom: tuple[str, ...] = ()
    depth: tuple[DepthGroup, ...] = ()
    examples: tuple[tuple[Position, str], ...] = ()
    outlets: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def before_text(self) -> str:
        return "\n".join(self.before)

    @property
    def after_text(self) -> str:
        return "\n".join(self.after)


@dataclass(frozen=True, slots=True)
class Activation:
    """The result of one scan."""

    entries: tuple[ActivatedEntry, ...]
    timers: TimedEffects
    variables: Variables
    budget: int
    overflowed: bool
    loops: int
    trace_records: Mapping[tuple[str, int], _Note]  # internal; read `decisions()`/`trace()`
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
                            played.book.name, entry.uid, entry.comment, Outcome.DISABLED, "disabled"
                        )
                    elif not entry.key and not entry.constant:
                        record = EntryTrace(
                            played.book.name,
                            entry.uid,
                            entry.comment,
                            Outcome.NO_KEYS,
                            "has no primary keys",
                        )
                    else:
                        record = EntryTrace(
                            played.book.name,
                            entry.uid,
                            entry.comment,
                            Outcome.NO_MATCH,
                            "no primary key found in the scanned text",
                        )
                yield record


def place(
    entries: Sequence[ActivatedEntry], transform: Callable[[ActivatedEntry], str] | None = None
) -> Placement:
    """SillyTavern's prompt building from activated entries (algo-world-info.md §9)."""
    ordered = sorted(entries, key=lambda item: -item.order)  # stable, like JS sort
    lists: dict[Position, list[str]] = {p: [] for p in Position}
    examples: list[tuple[Position, str]] = []
    depth_groups: list[tuple[int | None, EntryRole, list[ActivatedEntry], list[str]]] = []
    outlets: dict[str, list[str]] = {}
    for item in ordered:
        text = transform(item) if transform is not None else item.content
        if not text:
            continue  # §9: empty processed content is dropped
        position = item.position
        if position is None:
            continue  # a file entry without `position` is inserted nowhere
        if position in (Position.EM_TOP, Position.EM_BOTTOM):
            examples.insert(0, (position, text))
        elif position is Position.AT_DEPTH:
            depth = item.entry.depth if item.entry.depth is not None else 4
            role = item.entry.role if item.entry.role is not None else EntryRole.SYSTEM
            for group in depth_groups:
                # §9.2: a group keeps its first entry's raw depth; a missing one (NaN in
                # SillyTavern) equals nothing, so such a group never takes more entries
                if group[0] is not None and group[0] == depth and group[1] == role:
                    group[2].insert(0, item)
                    group[3].insert(0, text)
                    break
            else:
                depth_groups.append((item.entry.depth, role, [item], [text]))
        elif position is Position.OUTLET:
            name = str(item.entry.extras.get("outletName", ""))
            # newer SillyTavern: outlet lists iterate highest order first (unverified)
            outlets.setdefault(name, []).append(text)
        else:
            lists[position].insert(0, text)
    return Placement(
        before=tuple(lists[Position.BEFORE]),
        after=tuple(lists[Position.AFTER]),
        an_top=tuple(lists[Position.AN_TOP]),
        an_bottom=tuple(lists[Position.AN_BOTTOM]),
        depth=tuple(
            DepthGroup(depth, role, tuple(items), tuple(texts))
            for depth, role, items, texts in depth_groups
        ),
        examples=tuple(examples),
        outlets=MappingProxyType({k: tuple(v) for k, v in outlets.items()}),
    )


class _State(IntEnum):
    NONE = 0
    INITIAL = 1
    RECURSION = 2
    MIN_ACTIVATIONS = 3


@dataclass(slots=True)
class _Book:
    """A compiled book in this turn, with the hits of its keys so far."""

    played: BookInPlay
    compiled: CompiledBook
    tier: int
    sequence: int
    message_hits: dict[int, int] = field(default_factory=dict)  # key -> newest message index
    injection_hits: set[int] = field(default_factory=set)
    recursion_hits: dict[int, int] = field(default_factory=dict)  # key -> first block
    candidates: set[int] = field(default_factory=set)
    seen_keys: set[int] = field(default_factory=set)


class _Scan:
    """One run of the scan loop; holds the mutable bookkeeping of `checkWorldInfo`."""

    def __init__(
        self,
        books: list[_Book],
        messages: list[str],
        injections: list[str],
        settings: WorldInfoSettings,
        count_tokens: Callable[[str], int],
        character: CharacterIdentity,
        macros: MacroContext | None,
        seed: int,
        forced: Collection[tuple[str, int]],
        dry_run: bool,
    ) -> None:
        self.books = books
        self.messages = messages
        self.injections = injections
        self.settings = settings
        self.count_tokens = count_tokens
        self.character = character
        self.macros = macros
        self.variables = macros.variables if macros is not None else Variables()
        self.random = SeededRandom(string_hash(f"world-info-{seed}")).random
        self.forced = set(forced)
        self.dry_run = dry_run
        self.rule = settings.boundaries
        self.recursion: list[str] = []
        self.skew = 0
        self.trace: dict[tuple[str, int], _Note] = {}
        self.sticky: set[_Ref] = set()
        self.cooldown: set[_Ref] = set()
        self.contents: dict[_Ref, str] = {}
        self.dynamic_keys: dict[str, str] = {}
        self.haystacks: dict[tuple[int, bool, int], str] = {}
        self.scanned = 0
        for book in books:
            self._scan_segments(book, injections, "injection", 0)
        self.ensure_messages(max([settings.depth] + [b.compiled.max_scan_depth for b in books]))

    # --- key hits ----------------------------------------------------------------
    def _scan_segments(self, book: _Book, texts: Sequence[str], where: str, first: int) -> None:
        """Find the book's static keys in texts; `first` is the index of `texts[0]`."""
        compiled = book.compiled
        memo = compiled.text_hits
        for offset, text in enumerate(texts):
            index = first + offset
            key_ids = memo.get(text)
            if key_ids is None:
                key_ids = self._keys_in(compiled, text)
                if len(memo) >= 4096:  # a bounded memo: the chat's recent messages
                    memo.clear()
                memo[text] = key_ids
            if where == "message":
                hits = book.message_hits
                for key_id in key_ids:
                    if hits.get(key_id, MAX_SCAN_DEPTH) > index:
                        hits[key_id] = index
            elif where == "injection":
                book.injection_hits.update(key_ids)
            else:
                for key_id in key_ids:
                    book.recursion_hits.setdefault(key_id, index)
            seen = book.seen_keys
            for key_id in key_ids:
                if key_id not in seen:
                    seen.add(key_id)
                    book.candidates.update(compiled.key_entries[key_id])

    def _keys_in(self, compiled: CompiledBook, text: str) -> tuple[int, ...]:
        """The static plain keys of a book found in one text (a pure function of both)."""
        found: set[int] = set()
        lowered: str | None = None
        for case_sensitive, table in compiled.word_keys.items():
            if not table:
                continue
            if case_sensitive:
                hay = text
            else:
                lowered = lowered if lowered is not None else text.lower()
                hay = lowered
            for run in word_runs(hay, self.rule):
                ids = table.get(run)
                if ids is not None:
                    found.update(ids)
        for case_sensitive, automaton in compiled.automata.items():
            if case_sensitive:
                hay = text
            else:
                lowered = lowered if lowered is not None else text.lower()
                hay = lowered
            for end, (needle, ids) in automaton.iter(hay):
                start = end - len(needle) + 1
                for key_id in ids:
                    if key_id in found:
                        continue
                    spec = compiled.keys[key_id]
                    if spec.whole_word and not bounded(hay, start, end + 1, self.rule):
                        continue
                    found.add(key_id)
        return tuple(sorted(found))

    def ensure_messages(self, depth: int) -> None:
        """Make sure the newest `depth` messages have been run through the automata."""
        depth = min(depth, len(self.messages))
        if depth <= self.scanned:
            return
        for book in self.books:
            self._scan_segments(book, self.messages[self.scanned : depth], "message", self.scanned)
        self.scanned = depth

    def add_recursion(self, text: str) -> None:
        self.recursion.append(text)
        self.haystacks.clear()
        for book in self.books:
            self._scan_segments(book, [text], "recursion", len(self.recursion) - 1)

    def depth_of(self, item: CompiledEntry) -> int:
        scan_depth = item.entry.scan_depth
        return scan_depth if scan_depth is not None else self.settings.depth + self.skew

    def haystack(self, depth: int, state: _State) -> str:
        """SillyTavern's `WorldInfoBuffer.get` text for this depth (§2.2)."""
        if depth <= 0:
            return ""
        depth = min(depth, MAX_SCAN_DEPTH)
        with_recursion = bool(self.recursion) and state is not _State.MIN_ACTIVATIONS
        cache_key = (depth, with_recursion, len(self.recursion))
        text = self.haystacks.get(cache_key)
        if text is None:
            text = "\x01" + "\n\x01".join(self.messages[:depth])
            if self.injections:
                text += "\n\x01" + "\n\x01".join(self.injections)
            if with_recursion:
                text += "\n\x01" + "\n\x01".join(self.recursion)
            self.haystacks[cache_key] = text
        return text

    def substituted(self, raw: str) -> str:
        if self.macros is None:
            return raw
        value = self.dynamic_keys.get(raw)
        if value is None:
            context = self.macros
            if context.variables is not self.variables:
                context = _with_variables(context, self.variables)
            value = evaluate(raw, context).text
            self.dynamic_keys[raw] = value
        return value

    def key_found(self, slot: int, item: CompiledEntry, key_id: int, state: _State) -> bool:
        """Is this key of this entry in the entry's scan text (§3)?"""
        book = self.books[slot]
        spec = book.compiled.keys[key_id]
        depth = self.depth_of(item)
        if spec.kind == "plain":
            if depth <= 0:
                return False
            if book.message_hits.get(key_id, MAX_SCAN_DEPTH) < min(depth, MAX_SCAN_DEPTH):
                return True
            if key_id in book.injection_hits:
                return True
            return state is not _State.MIN_ACTIVATIONS and key_id in book.recursion_hits
        if spec.kind == "empty":
            return False
        if spec.kind == "always":
            return True
        haystack = self.haystack(depth, state)
        if spec.kind == "regex":
            return spec.regex is not None and spec.regex.test(haystack)
        key = self.substituted(spec.raw)
        if not key:
            return False
        return match_key(
            haystack,
            js_trim(key),
            case_sensitive=spec.case_sensitive,
            whole_words=spec.whole_word,
            rule=self.rule,
        )

    def score(self, ref: _Ref, state: _State) -> int:
        """Group scoring: raw keys found, SillyTavern's `getScore` (§6.3)."""
        slot, index = ref
        item = self.books[slot].compiled.entries[index]
        entry = item.entry
        haystack = self.haystack(self.depth_of(item), state)

        def found(raw: str) -> bool:
            return match_key(
                haystack,
                raw,
                case_sensitive=item.case_sensitive,
                whole_words=item.whole_words,
                rule=self.rule,
            )

        primary = sum(1 for raw in entry.key if found(raw))
        secondary = sum(1 for raw in entry.keysecondary if found(raw))
        if not entry.key:
            return 0
        if entry.keysecondary and "selectiveLogic" not in entry.missing:
            if entry.selective_logic is SelectiveLogic.AND_ANY:
                return primary + secondary
            if entry.selective_logic is SelectiveLogic.AND_ALL:
                return primary + secondary if secondary == len(entry.keysecondary) else primary
        return primary

    # --- trace -----------------------------------------------------------------------
    def note(
        self,
        ref: _Ref,
        outcome: Outcome,
        reason: str,
        loop: int,
        primary_key: str | None = None,
        secondary_keys: tuple[str, ...] = (),
        roll: float | None = None,
    ) -> None:
        # Plain tuples: a scan of a large book notes thousands of decisions per turn,
        # and the inspector asks for the trace far less often than a turn runs.
        slot, index = ref
        item = self.books[slot].compiled.entries[index]
        self.trace[(item.book, item.entry.uid)] = (
            outcome,
            reason,
            loop,
            primary_key,
            secondary_keys,
            roll,
            item.entry.comment,
        )


def _with_variables(context: MacroContext, variables: Variables) -> MacroContext:
    from dataclasses import replace

    return replace(context, variables=variables)


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
      count on the timer clock all the same.
    """
    settings = settings or WorldInfoSettings()
    character = character or CharacterIdentity()
    timers = timers or TimedEffects()
    ordered, dropped = _ordered_books(books, settings.character_strategy)
    slots: list[_Book] = []
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
        slots.append(_Book(played=played, compiled=compiled, tier=tier, sequence=sequence))

    names = settings.include_names
    recent = messages[-MAX_SCAN_DEPTH:]  # the scan buffer holds at most 1000 messages
    newest_first = [
        (f"{m.name}: {m.text}" if names and m.name is not None else m.text).strip()
        for m in reversed(recent)
    ]
    scan = _Scan(
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
    )
    clock = earlier + len(messages)
    budget = settings.budget_for(max_context)
    records = _Records(timers)
    if not dry_run:
        _check_timers(scan, records, clock)

    result = _run(scan, budget, clock)
    activated, overflowed, loops = result
    if not dry_run:
        for ref in activated:
            slot, index = ref
            item = slots[slot].compiled.entries[index]
            for kind in ("sticky", "cooldown"):
                value = getattr(item.entry, kind)
                if value and item.key not in records.table(kind):
                    records.table(kind)[item.key] = TimedEffect(
                        hash=item.hash, start=clock, end=clock + int(value), protected=False
                    )

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


class _Records:
    """Mutable copy of the timer records during one scan."""

    def __init__(self, timers: TimedEffects) -> None:
        self.sticky = dict(timers.sticky)
        self.cooldown = dict(timers.cooldown)

    def table(self, kind: str) -> dict[str, TimedEffect]:
        return self.sticky if kind == "sticky" else self.cooldown

    def freeze(self) -> TimedEffects:
        return TimedEffects(
            sticky=MappingProxyType(dict(self.sticky)),
            cooldown=MappingProxyType(dict(self.cooldown)),
        )


def _find_ref(scan: _Scan, record_key: str, record_hash: int) -> _Ref | None:
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


def _check_timers(scan: _Scan, records: _Records, clock: int) -> None:
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


def _delayed(scan: _Scan, entry: Entry, clock: int) -> bool:
    return not scan.dry_run and bool(entry.delay) and clock < (entry.delay or 0)


def _run(scan: _Scan, budget: int, clock: int) -> tuple[dict[_Ref, int], bool, int]:
    """The scan loop (§4.2); returns activated refs (in order, with their pass)."""
    settings = scan.settings
    activated: dict[_Ref, int] = {}
    failed: set[_Ref] = set()
    all_text = ""
    overflowed = False
    count = 0
    if not any(book.compiled.entries for book in scan.books):
        return activated, overflowed, count
    levels = sorted(set().union(*(book.compiled.delay_levels for book in scan.books)))
    current_level = levels.pop(0) if levels else 0
    state = _State.INITIAL

    rank_cache: dict[_Ref, tuple[int, float, int, int]] = {}

    def rank(ref: _Ref) -> tuple[int, float, int, int]:
        value = rank_cache.get(ref)
        if value is None:
            book = scan.books[ref[0]]
            item = book.compiled.entries[ref[1]]
            value = (book.tier, -item.order, book.sequence, item.loaded)
            rank_cache[ref] = value
        return value

    forced_refs: set[_Ref] = set()
    for slot, book in enumerate(scan.books):
        for name, uid in scan.forced:
            if name == book.compiled.book.name and uid in book.compiled.by_uid:
                forced_refs.add((slot, book.compiled.by_uid[uid]))

    while state is not _State.NONE:
        if settings.max_recursion_steps and settings.max_recursion_steps <= count:
            break
        count += 1
        next_state = _State.NONE
        candidates: set[_Ref] = set(scan.sticky) | forced_refs
        for slot, book in enumerate(scan.books):
            candidates.update((slot, index) for index in book.candidates)
            candidates.update((slot, index) for index in book.compiled.always)
        found_now: list[_Ref] = []
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
                scan.note(removal.ref, Outcome.GROUP, removal.reason, count)
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
                        Outcome.PROBABILITY,
                        f"rolled {roll:.1f} > probability {chance:g}",
                        count,
                        roll=roll,
                    )
                    continue
            content = scan.contents.get(ref, item.content)
            if scan.macros is not None:
                context = scan.macros
                if context.variables is not scan.variables:
                    context = _with_variables(context, scan.variables)
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
                    Outcome.BUDGET,
                    f"budget of {budget} tokens reached; the scan stops here",
                    count,
                    roll=roll,
                )
                break
            activated[ref] = count
            previous = scan.trace.get((item.book, entry.uid))
            if previous is not None and previous[0] is Outcome.ACTIVATED:
                scan.trace[(item.book, entry.uid)] = (*previous[:5], roll, previous[6])
            else:
                scan.note(ref, Outcome.ACTIVATED, "activated", count, roll=roll)
        if stopped_at is not None:
            for ref in new_entries[stopped_at + 1 :]:
                if ref not in failed:
                    scan.note(ref, Outcome.NOT_REACHED, "after the budget overflowed", count)

        successful = [ref for ref in new_entries if ref not in failed]
        for_recursion = [
            ref
            for ref in successful
            if not scan.books[ref[0]].compiled.entries[ref[1]].entry.prevent_recursion
        ]
        if settings.recursive and not overflowed and for_recursion:
            next_state = _State.RECURSION
        if (
            settings.recursive
            and not overflowed
            and state is _State.MIN_ACTIVATIONS
            and scan.recursion
        ):
            next_state = _State.RECURSION
        if (
            next_state is _State.NONE
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
                next_state = _State.MIN_ACTIVATIONS
                scan.skew += 1
                scan.haystacks.clear()
                scan.ensure_messages(settings.depth + scan.skew)
        if next_state is _State.NONE and levels:
            # §4.2 step 9: delayed levels get their pass even without recursion or budget
            next_state = _State.RECURSION
            current_level = levels.pop(0)
        state = next_state
        if state is not _State.NONE:
            text = "\n".join(
                scan.contents.get(ref, scan.books[ref[0]].compiled.entries[ref[1]].content)
                for ref in for_recursion
            )
            scan.add_recursion(text)
            all_text = text + "\n" + all_text
    return activated, overflowed, count


def _member(scan: _Scan, ref: _Ref, clock: int) -> GroupMember[_Ref]:
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
        delayed=_delayed(scan, entry, clock),
    )


def _consider(
    scan: _Scan,
    ref: _Ref,
    state: _State,
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
        note(ref, Outcome.DISABLED, "disabled", loop)
        return False
    flt = entry.character_filter
    if flt is not None and flt.names:
        included = scan.character.file_name in flt.names
        if included if flt.is_exclude else not included:
            note(ref, Outcome.CHARACTER_FILTER, "filtered out for this character", loop)
            return False
    if flt is not None and flt.tags and scan.character.tags is not None:
        has_tag = any(tag in flt.tags for tag in scan.character.tags)
        if has_tag if flt.is_exclude else not has_tag:
            note(ref, Outcome.TAG_FILTER, "filtered out by the character's tags", loop)
            return False
    sticky = ref in scan.sticky
    if _delayed(scan, entry, clock):
        note(ref, Outcome.DELAY, f"delayed until the chat has {entry.delay} messages", loop)
        return False
    if ref in scan.cooldown and not sticky:
        note(ref, Outcome.COOLDOWN, "on cooldown", loop)
        return False
    if state is not _State.RECURSION and entry.delay_level and not sticky:
        note(ref, Outcome.DELAY_UNTIL_RECURSION, "waits for a recursion pass", loop)
        return False
    if state is _State.RECURSION and entry.delay_level > level and not sticky:
        note(
            ref,
            Outcome.DELAY_UNTIL_RECURSION,
            f"waits for recursion level {entry.delay_level} (now {level})",
            loop,
        )
        return False
    if (
        state is _State.RECURSION
        and scan.settings.recursive
        and entry.exclude_recursion
        and not sticky
    ):
        note(ref, Outcome.EXCLUDE_RECURSION, "cannot be activated by other entries", loop)
        return False
    if "@@activate" in item.decorators:
        note(ref, Outcome.ACTIVATED, "@@activate decorator", loop)
        return True
    if "@@dont_activate" in item.decorators:
        note(ref, Outcome.DONT_ACTIVATE, "@@dont_activate decorator", loop)
        return False
    if entry.constant:
        note(ref, Outcome.ACTIVATED, "constant", loop)
        return True
    if forced:
        note(ref, Outcome.ACTIVATED, "activated from outside the scan", loop)
        return True
    if sticky:
        note(ref, Outcome.ACTIVATED, "sticky", loop)
        return True
    if not entry.key:
        note(ref, Outcome.NO_KEYS, "has no primary keys", loop)
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
        note(ref, Outcome.NO_MATCH, "no primary key found in the scanned text", loop)
        return False
    if not (entry.selective and entry.keysecondary):
        note(ref, Outcome.ACTIVATED, f"primary key '{primary}'", loop, primary_key=primary)
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
        note(
            ref,
            Outcome.SECONDARY,
            f"primary key '{primary}' found but secondary keys fail {label}",
            loop,
            primary_key=primary,
            secondary_keys=tuple(found),
        )
        return False
    note(
        ref,
        Outcome.ACTIVATED,
        f"primary key '{primary}' and secondary keys satisfy {label}",
        loop,
        primary_key=primary,
        secondary_keys=tuple(found),
    )
    return True
