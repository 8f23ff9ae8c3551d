"""How one key is found in scanned text: case, whole words, regex (algo-world-info.md §3).

Two word-boundary rules are offered (`Boundaries`):

- `ASCII` is SillyTavern's: a single-word key must sit between the text's edges or
  characters outside `[A-Za-z0-9_]`. Every non-ASCII letter counts as a boundary, so
  `caf` is found in `café`, while `東京` is missed in `東京2024` and `李明` in `李明abc`.
- `UNICODE` (taverna's default) treats every letter and digit of every script as part
  of a word, so `caf` no longer matches `café`; and it knows that Chinese, Japanese,
  Thai, Lao, Khmer and Myanmar are written without spaces and Korean attaches particles
  to words: an occurrence is bounded if the key's edge character or its neighbour is
  from one of those scripts. `東京` is found in `東京2024年`, `서울` in `서울에`, and
  `Tokyo` in `我去Tokyo了`, while Latin-script keys keep true whole-word behaviour.

`match_key` is the reference matcher used for dynamic (macro) keys, regex keys and group
scoring; the precompiled index (`index.py`) gives the same answers for static keys.
"""

from __future__ import annotations

import re
from functools import lru_cache

from taverna.engine.lorebook.jsregex import parse_regex_key
from taverna.engine.lorebook.regex_budget import RegexBudget
from taverna.model.js_text import JS_WHITESPACE
from taverna.model.lorebook import Boundaries

__all__ = [
    "bounded",
    "is_word",
    "match_key",
    "split_words",
    "word_runs",
]

_JS_SPACE_RUN = re.compile(f"[{JS_WHITESPACE}]+")
_ASCII_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")

# Scripts written without spaces between words (or with particles glued to words).
_CONTINUOUS_RANGES = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x2E80, 0x2FDF),  # CJK radicals
    (0x3000, 0x303F),  # CJK symbols and punctuation
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3100, 0x31FF),  # Bopomofo, Hangul compatibility jamo, Katakana extension
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA960, 0xA97F),  # Hangul Jamo extension A
    (0xAC00, 0xD7FF),  # Hangul syllables and Jamo extension B
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFFDC),  # halfwidth Katakana and Hangul
    (0x20000, 0x3134F),  # CJK extensions B-H
)


_CONTINUOUS_CLASS = "".join(f"\\U{low:08x}-\\U{high:08x}" for low, high in _CONTINUOUS_RANGES)
_CONTINUOUS_SPLIT = re.compile(f"[{_CONTINUOUS_CLASS}]+")
_UNICODE_RUN = re.compile(r"\w+")  # Python's \w: str.isalnum() characters and "_"
_ASCII_RUN = re.compile(r"[A-Za-z0-9_]+")


@lru_cache(maxsize=4096)
def _continuous(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in _CONTINUOUS_RANGES)


@lru_cache(maxsize=4096)
def _unicode_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _runs(text: str, rule: Boundaries) -> frozenset[str]:
    if rule is Boundaries.ASCII:
        return frozenset(_ASCII_RUN.findall(text))
    runs: set[str] = set()
    for run in _UNICODE_RUN.findall(text):
        if run.isascii():
            runs.add(run)
        else:
            runs.update(part for part in _CONTINUOUS_SPLIT.split(run) if part)
    return frozenset(runs)


@lru_cache(maxsize=8192)
def word_runs(text: str, rule: Boundaries) -> frozenset[str]:
    """The maximal runs of word characters of `text` that a plain word key can equal.

    Cached: the same messages are scanned turn after turn.
    """
    return _runs(text, rule)


def is_word(key: str, rule: Boundaries) -> bool:
    """Whether `key` is one run of word characters (then whole-word matching is equality
    with a run of the text, found by a set lookup instead of a substring search)."""
    return _runs(key, rule) == {key}


def _edge_ok(neighbour: str | None, key_edge: str, rule: Boundaries) -> bool:
    if neighbour is None:
        return True
    if rule is Boundaries.ASCII:
        return neighbour not in _ASCII_WORD
    if _continuous(key_edge) or _continuous(neighbour):
        return True
    return not _unicode_word(neighbour)


def bounded(text: str, start: int, end: int, rule: Boundaries) -> bool:
    """Whether `text[start:end]` is a whole word under `rule`."""
    before = text[start - 1] if start > 0 else None
    after = text[end] if end < len(text) else None
    return _edge_ok(before, text[start], rule) and _edge_ok(after, text[end - 1], rule)


def split_words(key: str) -> list[str]:
    """JavaScript's `key.split(/\\s+/)` (leading or trailing space gives empty parts)."""
    return _JS_SPACE_RUN.split(key)


def _find_word(haystack: str, needle: str, rule: Boundaries) -> bool:
    if needle == "":
        # A whitespace-only key trims to "": `(?:^|\W)()(?:$|\W)` then matches at any
        # point between two boundaries (always, for a scan text starting with \x01).
        return any(
            (p == 0 or _edge_ok(haystack[p - 1], "a", rule))
            and (p == len(haystack) or _edge_ok(haystack[p], "a", rule))
            for p in range(len(haystack) + 1)
        )
    start = haystack.find(needle)
    while start >= 0:
        if bounded(haystack, start, start + len(needle), rule):
            return True
        start = haystack.find(needle, start + 1)
    return False


def match_key(
    haystack: str,
    key: str,
    *,
    case_sensitive: bool,
    whole_words: bool,
    rule: Boundaries,
    budget: RegexBudget | None = None,
    source: str = "",
) -> bool:
    """SillyTavern's `matchKeys`: is `key` (already substituted) found in `haystack`?

    A regex key runs within the turn's `budget` when one is given (`source`: its entry).
    """
    pattern = parse_regex_key(key)
    if pattern is not None:
        return pattern.test(haystack, budget, source)
    if not case_sensitive:
        haystack = haystack.lower()
        key = key.lower()
    if whole_words:
        if len(split_words(key)) > 1:
            return key in haystack
        return _find_word(haystack, key, rule)
    return key in haystack
