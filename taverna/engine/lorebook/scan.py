"""The mutable state of one lorebook scan: key hits, the scan buffer, the trace (§2, §3)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from taverna.engine.lorebook.index import CompiledBook, CompiledEntry
from taverna.engine.lorebook.inputs import BookInPlay, CharacterIdentity
from taverna.engine.lorebook.matching import bounded, match_key, word_runs
from taverna.engine.lorebook.regex_budget import RegexBudget
from taverna.engine.lorebook.results import TraceNote
from taverna.engine.macros import MacroContext, SeededRandom, Variables, evaluate, string_hash
from taverna.model.js_text import js_trim
from taverna.model.lorebook import EntryOutcome, Reason, SelectiveLogic, WorldInfoSettings

MAX_SCAN_DEPTH = 1000

EntryRef = tuple[int, int]  # (book slot, entry index)


class ScanState(IntEnum):
    """The kind of pass the scan loop is in (SillyTavern's `scan_state`, §4.2)."""

    NONE = 0
    INITIAL = 1
    RECURSION = 2
    MIN_ACTIVATIONS = 3


@dataclass(slots=True)
class ScannedBook:
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


class Scan:
    """One run of the scan loop; holds the mutable bookkeeping of `checkWorldInfo`."""

    def __init__(
        self,
        books: list[ScannedBook],
        messages: list[str],
        injections: list[str],
        settings: WorldInfoSettings,
        count_tokens: Callable[[str], int],
        character: CharacterIdentity,
        macros: MacroContext | None,
        seed: int,
        forced: Collection[tuple[str, int]],
        dry_run: bool,
        regexes: RegexBudget | None = None,
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
        # `forced` as a mapping: why each was activated from outside (a similarity score).
        self.forced_reasons: dict[tuple[str, int], Reason] = (
            {k: _reason(v) for k, v in forced.items()} if isinstance(forced, Mapping) else {}
        )
        self.dry_run = dry_run
        self.rule = settings.boundaries
        self.recursion: list[str] = []
        self.skew = 0
        self.trace: dict[tuple[str, int], TraceNote] = {}
        self.sticky: set[EntryRef] = set()
        self.cooldown: set[EntryRef] = set()
        self.contents: dict[EntryRef, str] = {}
        self.dynamic_keys: dict[str, str] = {}
        self.haystacks: dict[tuple[int, bool, int], str] = {}
        self.scanned = 0
        # User regex keys run within the turn's time; each runs once per scan text.
        self.regexes = regexes if regexes is not None else RegexBudget()
        self.regex_hits: dict[tuple[int, int, str], bool] = {}
        self.regex_stopped: set[tuple[int, int]] = set()  # (slot, key) a time limit stopped
        for book in books:
            self._scan_segments(book, injections, "injection", 0)
        self.ensure_messages(max([settings.depth] + [b.compiled.max_scan_depth for b in books]))

    # --- key hits ----------------------------------------------------------------
    def _scan_segments(
        self, book: ScannedBook, texts: Sequence[str], where: str, first: int
    ) -> None:
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

    def haystack(self, depth: int, state: ScanState) -> str:
        """SillyTavern's `WorldInfoBuffer.get` text for this depth (§2.2)."""
        if depth <= 0:
            return ""
        depth = min(depth, MAX_SCAN_DEPTH)
        with_recursion = bool(self.recursion) and state is not ScanState.MIN_ACTIVATIONS
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
                context = with_variables(context, self.variables)
            value = evaluate(raw, context).text
            self.dynamic_keys[raw] = value
        return value

    def key_found(self, slot: int, item: CompiledEntry, key_id: int, state: ScanState) -> bool:
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
            return state is not ScanState.MIN_ACTIVATIONS and key_id in book.recursion_hits
        if spec.kind == "empty":
            return False
        if spec.kind == "always":
            return True
        haystack = self.haystack(depth, state)
        if spec.kind == "regex":
            return spec.regex is not None and self._regex_found(slot, item, key_id, haystack)
        key = self.substituted(spec.raw)
        if not key:
            return False
        return match_key(
            haystack,
            js_trim(key),
            case_sensitive=spec.case_sensitive,
            whole_words=spec.whole_word,
            rule=self.rule,
            budget=self.regexes,
            source=f"{item.book}/{item.entry.uid}",
        )

    def _regex_found(self, slot: int, item: CompiledEntry, key_id: int, haystack: str) -> bool:
        """A regex key's test, once per scan text, within the turn's time for regexes."""
        memo = (slot, key_id, haystack)
        found = self.regex_hits.get(memo)
        if found is None:
            pattern = self.books[slot].compiled.keys[key_id].regex
            assert pattern is not None
            hit = pattern.test_within(haystack, self.regexes, f"{item.book}/{item.entry.uid}")
            if hit is None:
                self.regex_stopped.add((slot, key_id))
            found = hit is True
            self.regex_hits[memo] = found
        return found

    def stopped_keys(self, slot: int, key_ids: Sequence[int]) -> bool:
        """Whether a time limit stopped one of these regex keys in this scan."""
        return any((slot, key_id) in self.regex_stopped for key_id in key_ids)

    def score(self, ref: EntryRef, state: ScanState) -> int:
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
                budget=self.regexes,
                source=f"{item.book}/{entry.uid}",
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
        ref: EntryRef,
        outcome: EntryOutcome,
        reason: Reason,
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
            () if item.entry.comment.strip() else tuple(item.entry.key),
        )


def with_variables(context: MacroContext, variables: Variables) -> MacroContext:
    """The macro context with the variables as contents have changed them so far."""
    from dataclasses import replace

    return replace(context, variables=variables)


def _reason(value: object) -> Reason:
    """Why an entry was activated from outside: a Reason as given, other text as it is."""
    return value if isinstance(value, Reason) else Reason("", given=str(value))
