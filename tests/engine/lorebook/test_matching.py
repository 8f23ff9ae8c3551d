"""Key matching: scan text, case, whole words, regex keys (algo-world-info.md §2-3)."""

from __future__ import annotations

import time

import pytest

from taverna.engine.lorebook.jsregex import parse_regex_key
from taverna.engine.lorebook.matching import match_key
from taverna.model.lorebook import Boundaries, WorldInfoSettings

from .helpers import chat, entry, outcome, run, uids

ASCII = WorldInfoSettings(match_whole_words=True, boundaries=Boundaries.ASCII)
UNICODE = WorldInfoSettings(match_whole_words=True, boundaries=Boundaries.UNICODE)


def test_scan_depth_counts_newest_messages() -> None:
    """§2.2: depth 2 = the last two visible messages."""
    messages = chat("the dragon sleeps", "hello", "nothing here")
    assert uids(run([entry(0, "dragon")], messages)) == []
    deeper = WorldInfoSettings(depth=3)
    assert uids(run([entry(0, "dragon")], messages, settings=deeper)) == [0]


def test_entry_scan_depth_overrides_global() -> None:
    """§2.2: `scanDepth` replaces the global depth for that entry."""
    messages = chat("the dragon sleeps", "hello", "nothing here")
    assert uids(run([entry(0, "dragon", scan_depth=3)], messages)) == [0]
    assert uids(run([entry(0, "here", scan_depth=0)], messages)) == []


def test_depth_zero_scans_nothing_not_even_injections() -> None:
    """§2.2 edge case (1.12.6): depth 0 returns an empty scan text."""
    result = run([entry(0, "dragon", scan_depth=0)], "dragon", injections=["dragon"])
    assert uids(result) == []


def test_injections_are_scanned_beyond_depth() -> None:
    """§2.1: prompts flagged for scanning are always in the scan text."""
    result = run([entry(0, "lighthouse")], "hello", injections=["the lighthouse keeper"])
    assert uids(result) == [0]


def test_names_are_part_of_the_scan_text() -> None:
    """§2 step 4: each message is scanned as `Name: text` when names are included."""
    messages = chat("hello there", names=("Seraphina", "Char"))
    assert uids(run([entry(0, "seraphina")], messages)) == [0]
    no_names = WorldInfoSettings(include_names=False)
    assert uids(run([entry(0, "seraphina")], messages, settings=no_names)) == []


def test_case_insensitive_by_default_and_per_entry_override() -> None:
    """§3.2 step 1: both sides lower-cased unless case-sensitive (entry ?? global)."""
    assert uids(run([entry(0, "Dragon")], "a DRAGON")) == [0]
    assert uids(run([entry(0, "Dragon", case_sensitive=True)], "a DRAGON")) == []
    sensitive = WorldInfoSettings(case_sensitive=True)
    assert uids(run([entry(0, "Dragon")], "a Dragon", settings=sensitive)) == [0]
    assert uids(run([entry(0, "Dragon", case_sensitive=False)], "DRAGON", settings=sensitive)) == [
        0
    ]


@pytest.mark.parametrize(
    ("key", "text", "ascii_result", "unicode_result"),
    [
        ("cat", "a cat.", True, True),
        ("cat", "cats", False, False),
        ("caf", "café", True, False),  # SillyTavern counts é as a boundary
        ("café", "cafés", False, False),
        ("東京", "東京タワー", True, True),
        ("東京", "東京abc", False, True),
        ("東京", "東京2024年", False, True),
        ("李明", "李明abc说", False, True),
        ("서울", "서울에 갔다", True, True),
        ("Tokyo", "我去Tokyo了", True, True),
        ("Tokyo", "Tokyoites", False, False),
        ("red fox", "tired foxes", True, True),  # multi-word keys are substrings
        ("heron-knight", "the heron-knight.", True, True),
    ],
)
def test_whole_word_table(key: str, text: str, ascii_result: bool, unicode_result: bool) -> None:
    """§3.2 step 3: SillyTavern's ASCII `\\W` table, and taverna's CJK-aware rule."""
    assert bool(uids(run([entry(0, key)], text, settings=ASCII))) is ascii_result
    assert bool(uids(run([entry(0, key)], text, settings=UNICODE))) is unicode_result
    for rule, expected in ((Boundaries.ASCII, ascii_result), (Boundaries.UNICODE, unicode_result)):
        reference = match_key(
            "\x01User: " + text, key, case_sensitive=False, whole_words=True, rule=rule
        )
        assert reference is expected


def test_whole_words_off_is_substring() -> None:
    """§3.2 step 2: without whole words a key is a plain substring."""
    assert uids(run([entry(0, "cat")], "concatenate")) == [0]
    assert uids(run([entry(0, "cat", match_whole_words=True)], "concatenate")) == []


def test_whitespace_only_key_matches_everything() -> None:
    """§3: the emptiness test runs before trimming, so "  " is matched as "" (always)."""
    assert uids(run([entry(0, "  ")], "anything")) == [0]
    assert uids(run([entry(0, "")], "anything")) == []


def test_regex_key_ignores_case_and_whole_word_settings() -> None:
    """§3.1: a `/pattern/flags` key is a JavaScript regex tested on the raw text."""
    sensitive = WorldInfoSettings(case_sensitive=True, match_whole_words=True)
    assert uids(run([entry(0, "/\\bkael\\b/i")], "KAEL arrives", settings=sensitive)) == [0]
    assert uids(run([entry(0, "/\\bkael\\b/")], "KAEL arrives", settings=sensitive)) == []
    assert uids(run([entry(0, "/drag.n/")], "dragon", settings=sensitive)) == [0]


def test_regex_key_javascript_semantics() -> None:
    """§3.1 Python note: JS `\\d`, `\\w`, `$` and `.` differ from Python's; we follow JS."""
    assert parse_regex_key("/^\\d+$/").test("١٢٣") is False  # type: ignore[union-attr]
    assert parse_regex_key("/^\\d+$/").test("123") is True  # type: ignore[union-attr]
    assert parse_regex_key("/end$/").test("the end\n") is False  # type: ignore[union-attr]
    assert parse_regex_key("/end$/m").test("the end\nx") is True  # type: ignore[union-attr]
    assert parse_regex_key("/a.b/").test("a\rb") is False  # type: ignore[union-attr]
    assert parse_regex_key("/a.b/s").test("a\rb") is True  # type: ignore[union-attr]
    assert parse_regex_key("/(?<n>ab)\\k<n>/").test("abab") is True  # type: ignore[union-attr]
    assert parse_regex_key("/[^]/").test("\n") is True  # type: ignore[union-attr]
    assert parse_regex_key("/\\p{L}+/u").test("東京") is True  # type: ignore[union-attr]
    assert parse_regex_key("/\\p{L}/").test("p{L}") is True  # type: ignore[union-attr]
    assert parse_regex_key("/\\u{1F600}/u").test("😀") is True  # type: ignore[union-attr]
    assert parse_regex_key("/(?<=sir )kael/i").test("Sir Kael") is True  # type: ignore[union-attr]
    assert parse_regex_key("/[\\w-]+x/").test("é-x") is True  # type: ignore[union-attr]
    assert parse_regex_key("/\\Bx/").test("ax") is True  # type: ignore[union-attr]


def test_what_is_not_a_regex_key() -> None:
    """§3.1: unescaped `/` inside, unknown flags, or a body JS rejects -> plain key."""
    assert parse_regex_key("/a/b/") is None
    assert parse_regex_key("/abc/x") is None
    assert parse_regex_key("/(unclosed/") is None
    assert parse_regex_key("/a\\/b/") is not None
    assert uids(run([entry(0, "/(unclosed/")], "see /(unclosed/ here")) == [0]


def test_catastrophic_regex_cannot_hang_the_scan() -> None:
    """Beyond SillyTavern: a user's backtracking regex times out as "no match"."""
    evil = "/(a|aa)+$/"  # exponential backtracking on a run of a's not at the end
    pattern = parse_regex_key(evil)
    assert pattern is not None
    start = time.perf_counter()
    assert pattern.test("a" * 60 + "!") is False
    assert time.perf_counter() - start < 1
    start = time.perf_counter()
    result = run([entry(0, evil), entry(1, "x")], "a" * 60 + "! x")
    assert time.perf_counter() - start < 2
    assert uids(result) == [1]
    assert outcome(result, 0) == "no match"
