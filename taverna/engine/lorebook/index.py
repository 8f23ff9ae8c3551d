"""A lorebook compiled for scanning: key automata, inverted index, decorators, order.

Scanning a turn must not loop over entries x keys with regexes. `compile_book` does the
per-book work once. A whole-word key that is a single run of word characters (most keys:
names, places) is found by looking the text's word runs up in a dictionary; every other
static plain key goes into one Aho-Corasick automaton per case class (case-sensitive
keys see the raw text, the others the lower-cased text). An inverted index leads from
key to entries. A turn then runs each automaton once over each piece
of scanned text and only looks at the entries whose keys were hit, plus the few that
must always be looked at (constants, `@@activate`, regex keys, keys with macros).

Compiled books are cached per `Lorebook` object (books are immutable: an edit makes a
new object, which compiles afresh), and also by name and `revision` when a store sets
one (a book read afresh each turn then compiles once per revision), per matching
settings. The cache is a pure
memo: it holds nothing a caller could observe other than speed.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

import ahocorasick

from taverna.engine.lorebook.decorators import parse_decorators
from taverna.engine.lorebook.groups import js_key_order
from taverna.engine.lorebook.hashing import entry_hash
from taverna.engine.lorebook.jsregex import JsRegex, parse_regex_key
from taverna.engine.lorebook.matching import is_word, split_words
from taverna.engine.macros import has_macros
from taverna.model.js_text import js_trim
from taverna.model.lorebook import Boundaries, Entry, Lorebook

__all__ = ["CompiledBook", "CompiledEntry", "KeySpec", "compile_book"]


@dataclass(frozen=True, slots=True)
class KeySpec:
    """One key of one entry, classified for matching.

    `kind` is `plain` (in an automaton), `regex`, `dynamic` (has macros: substituted
    every turn), `always` (whitespace only: SillyTavern finds it everywhere) or `empty`
    (never matches).
    """

    raw: str
    kind: str
    needle: str = ""
    case_sensitive: bool = False
    whole_word: bool = False
    regex: JsRegex | None = None
    word: bool = False  # a whole-word key that is one run of word characters


@dataclass(slots=True)
class CompiledEntry:
    """An entry with everything the scan needs precomputed."""

    entry: Entry
    book: str
    index: int  # position in the book file
    loaded: int  # position in SillyTavern's load order (the tie-break after `order`)
    order: float
    decorators: tuple[str, ...]
    content: str  # without decorator lines
    primary: tuple[int, ...]  # key ids
    secondary: tuple[int, ...]
    case_sensitive: bool
    whole_words: bool
    slow: bool  # has a regex, dynamic or always key: checked every pass
    groups: tuple[str, ...]
    _hash: int | None = None

    @property
    def key(self) -> str:
        """The timer record key `"<book>.<uid>"`."""
        return f"{self.book}.{self.entry.uid}"

    @property
    def hash(self) -> int:
        if self._hash is None:
            self._hash = entry_hash(self.entry, self.book, self.decorators, self.content)
        return self._hash


@dataclass(slots=True)
class CompiledBook:
    """One lorebook ready to scan under one set of matching settings."""

    book: Lorebook
    entries: list[CompiledEntry]
    keys: list[KeySpec]
    key_entries: list[tuple[int, ...]]  # key id -> entries (indices) with it as a primary key
    automata: dict[bool, ahocorasick.Automaton]  # case_sensitive -> automaton
    word_keys: dict[bool, dict[str, tuple[int, ...]]]  # case_sensitive -> word -> keys
    always: tuple[int, ...]  # entries that are candidates on every pass
    delay_levels: frozenset[int]
    max_scan_depth: int
    by_uid: dict[int, int] = field(default_factory=dict)
    # text -> static keys found in it; the same messages are scanned turn after turn
    text_hits: dict[str, tuple[int, ...]] = field(default_factory=dict)


_CACHE: weakref.WeakKeyDictionary[Lorebook, dict[tuple[bool, bool, str], CompiledBook]] = (
    weakref.WeakKeyDictionary()
)
_BY_REVISION: OrderedDict[tuple[str, str, tuple[bool, bool, str]], CompiledBook] = OrderedDict()
_REVISIONS_KEPT = 64
_LOCK = threading.Lock()


def _order_value(entry: Entry) -> float:
    # An entry without `order` sorts as the default 100 (SillyTavern's comparator
    # returns NaN there, which leaves the order unspecified).
    return float(entry.order) if "order" not in entry.missing else 100.0


def _classify(raw: str, case_sensitive: bool, whole_words: bool, rule: Boundaries) -> KeySpec:
    if raw == "":
        return KeySpec(raw=raw, kind="empty")
    if has_macros(raw):
        return KeySpec(
            raw=raw, kind="dynamic", case_sensitive=case_sensitive, whole_word=whole_words
        )
    key = js_trim(raw)
    if key == "":
        # algo-world-info.md §3: the emptiness test runs before trimming, so a
        # whitespace-only key is matched as "" and is found in any scan text.
        return KeySpec(raw=raw, kind="always")
    pattern = parse_regex_key(key)
    if pattern is not None:
        return KeySpec(raw=raw, kind="regex", needle=key, regex=pattern)
    needle = key if case_sensitive else key.lower()
    single = whole_words and len(split_words(needle)) == 1
    return KeySpec(
        raw=raw,
        kind="plain",
        needle=needle,
        case_sensitive=case_sensitive,
        whole_word=single,
        word=single and is_word(needle, rule),
    )


def _build(
    book: Lorebook, case_sensitive: bool, whole_words: bool, rule: Boundaries
) -> CompiledBook:
    keys: list[KeySpec] = []
    key_ids: dict[tuple[str, bool, bool], int] = {}
    key_entries: list[list[int]] = []
    needles: dict[bool, dict[str, list[int]]] = {True: {}, False: {}}
    words: dict[bool, dict[str, list[int]]] = {True: {}, False: {}}
    entries: list[CompiledEntry] = []
    always: list[int] = []
    levels: set[int] = set()

    def key_id(raw: str, cs: bool, ww: bool) -> int:
        found = key_ids.get((raw, cs, ww))
        if found is not None:
            return found
        spec = _classify(raw, cs, ww, rule)
        keys.append(spec)
        key_entries.append([])
        ident = len(keys) - 1
        key_ids[(raw, cs, ww)] = ident
        if spec.word:
            words[spec.case_sensitive].setdefault(spec.needle, []).append(ident)
        elif spec.kind == "plain":
            needles[spec.case_sensitive].setdefault(spec.needle, []).append(ident)
        return ident

    # getSortedEntries reads a book with Object.keys(data.entries): uid-like keys come
    # out in ascending number order whatever the file order (algo-world-info.md §1).
    loaded = js_key_order([str(entry.uid) for entry in book.entries])
    load_position = {key: position for position, key in enumerate(loaded)}
    for index, entry in enumerate(book.entries):
        if entry.delay_level:
            levels.add(entry.delay_level)
        cs = entry.case_sensitive if entry.case_sensitive is not None else case_sensitive
        ww = entry.match_whole_words if entry.match_whole_words is not None else whole_words
        decorators, content = parse_decorators(entry.content)
        primary = tuple(key_id(raw, cs, ww) for raw in entry.key)
        secondary = tuple(key_id(raw, cs, ww) for raw in entry.keysecondary)
        slow = any(keys[k].kind in ("regex", "dynamic", "always") for k in primary)
        compiled = CompiledEntry(
            entry=entry,
            book=book.name,
            index=index,
            loaded=load_position[str(entry.uid)],
            order=_order_value(entry),
            decorators=decorators,
            content=content,
            primary=primary,
            secondary=secondary,
            case_sensitive=cs,
            whole_words=ww,
            slow=slow,
            groups=entry.groups,
        )
        entries.append(compiled)
        if entry.disable:
            continue  # never a candidate; the trace says why
        for k in primary:
            key_entries[k].append(index)
        if entry.constant or "@@activate" in decorators or slow:
            always.append(index)

    automata: dict[bool, ahocorasick.Automaton] = {}
    for cs, table in needles.items():
        if not table:
            continue
        automaton = ahocorasick.Automaton()
        for needle, ids in table.items():
            automaton.add_word(needle, (needle, tuple(ids)))
        automaton.make_automaton()
        automata[cs] = automaton
    return CompiledBook(
        book=book,
        entries=entries,
        keys=keys,
        key_entries=[tuple(ids) for ids in key_entries],
        automata=automata,
        word_keys={cs: {n: tuple(ids) for n, ids in t.items()} for cs, t in words.items()},
        always=tuple(always),
        delay_levels=frozenset(levels),
        max_scan_depth=max(
            [min(e.scan_depth, 1000) for e in book.entries if e.scan_depth is not None] + [0]
        ),
        by_uid={entry.uid: i for i, entry in enumerate(book.entries)},
    )


def compile_book(
    book: Lorebook, *, case_sensitive: bool, whole_words: bool, boundaries: Boundaries
) -> CompiledBook:
    """The compiled form of `book` for these global matching settings (cached)."""
    settings = (case_sensitive, whole_words, boundaries.value)
    revision_key = (book.name, book.revision, settings) if book.revision else None
    with _LOCK:
        per_book = _CACHE.get(book)
        if per_book is not None and settings in per_book:
            return per_book[settings]
        if revision_key is not None and revision_key in _BY_REVISION:
            _BY_REVISION.move_to_end(revision_key)
            return _BY_REVISION[revision_key]
    compiled = _build(book, case_sensitive, whole_words, boundaries)
    with _LOCK:
        _CACHE.setdefault(book, {})[settings] = compiled
        if revision_key is not None:
            _BY_REVISION[revision_key] = compiled
            while len(_BY_REVISION) > _REVISIONS_KEPT:
                _BY_REVISION.popitem(last=False)
    return compiled
