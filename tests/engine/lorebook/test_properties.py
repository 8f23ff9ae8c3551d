"""Properties: a fixed seed gives the same scan; the precompiled index agrees with the
reference matcher (algo-world-info.md §3) for every key shape and both boundary rules."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from taverna.engine.lorebook.matching import match_key
from taverna.model.js_text import js_trim
from taverna.model.lorebook import Boundaries, Entry, Lorebook, SelectiveLogic, WorldInfoSettings

from .helpers import chat, run, uids

VOCAB = [
    "moon",
    "Moon",
    "tide",
    "storm",
    "东京",
    "東京",
    "서울",
    "café",
    "caf",
    "x_y",
    "a-b",
    "star",
]
key_text = st.one_of(
    st.sampled_from(VOCAB),
    st.builds(lambda a, b: f"{a} {b}", st.sampled_from(VOCAB), st.sampled_from(VOCAB)),
    st.sampled_from(["  moon", "/mo+n/i", "/tide$/", " ", ""]),
)
message_text = st.lists(
    st.one_of(st.sampled_from(VOCAB), st.sampled_from([" ", ".", "s", "2024", "\n", "年", "에"])),
    max_size=12,
).map("".join)


@st.composite
def lore(draw: st.DrawFn) -> Lorebook:
    entries = []
    for uid in range(draw(st.integers(1, 8))):
        entries.append(
            Entry(
                uid=uid,
                key=tuple(draw(st.lists(key_text, min_size=1, max_size=3))),
                keysecondary=tuple(draw(st.lists(key_text, max_size=2))),
                selective_logic=SelectiveLogic(draw(st.integers(0, 3))),
                content=" ".join(draw(st.lists(st.sampled_from(VOCAB), max_size=3))),
                order=draw(st.integers(0, 3)),
                probability=draw(st.sampled_from([100, 50, 0])),
                group=draw(st.sampled_from(["", "", "g", "g,h"])),
                group_weight=draw(st.sampled_from([100, 10])),
                constant=draw(st.booleans()) and draw(st.booleans()),
                prevent_recursion=draw(st.booleans()),
                delay_until_recursion=draw(st.sampled_from([0, 0, 0, 1, 2])),
                case_sensitive=draw(st.sampled_from([None, True, False])),
                match_whole_words=draw(st.sampled_from([None, True, False])),
            )
        )
    return Lorebook(name="P", entries=tuple(entries))


@settings(max_examples=80, deadline=None)
@given(lore(), st.lists(message_text, min_size=1, max_size=4), st.integers(0, 3))
def test_same_seed_same_scan(book: Lorebook, texts: list[str], seed: int) -> None:
    """Determinism: probability and group draws come from the seed only."""
    config = WorldInfoSettings(recursive=True, match_whole_words=True, depth=3)
    first = run(book, chat(*texts), settings=config, seed=seed)
    copy = Lorebook(name=book.name, entries=tuple(dataclasses.replace(e) for e in book.entries))
    second = run(copy, chat(*texts), settings=config, seed=seed)
    assert [(a.uid, a.content, a.loop) for a in first.entries] == [
        (a.uid, a.content, a.loop) for a in second.entries
    ]
    assert first.timers == second.timers
    assert list(first.trace()) == list(second.trace())


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(key_text, st.sampled_from([None, True, False])), min_size=1, max_size=6),
    st.lists(message_text, min_size=1, max_size=3),
    st.sampled_from(list(Boundaries)),
    st.booleans(),
    st.booleans(),
)
def test_index_agrees_with_reference_matcher(
    keys: list[tuple[str, bool | None]],
    texts: list[str],
    rule: Boundaries,
    whole_words: bool,
    case_sensitive: bool,
) -> None:
    """Every single-key entry activates exactly when SillyTavern's `matchKeys` finds the key."""
    book = Lorebook(
        name="P",
        entries=tuple(
            Entry(uid=i, key=(key,), content="", case_sensitive=cs)
            for i, (key, cs) in enumerate(keys)
        ),
    )
    config = WorldInfoSettings(
        match_whole_words=whole_words, case_sensitive=case_sensitive, boundaries=rule, depth=2
    )
    messages = chat(*texts)
    result = run(book, messages, settings=config)
    scanned = [f"{m.name}: {m.text}".strip() for m in reversed(messages)][:2]
    haystack = "\x01" + "\n\x01".join(scanned)
    expected = [
        i
        for i, (key, cs) in enumerate(keys)
        if key
        and match_key(
            haystack,
            js_trim(key),
            case_sensitive=cs if cs is not None else case_sensitive,
            whole_words=whole_words,
            rule=rule,
        )
    ]
    assert sorted(uids(result)) == expected


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("/\\()[]{}^$.*+?|-:<>=!kpuwdsbB0aA,gimsuy")), max_size=24)
)
def test_any_key_text_is_a_regex_or_plain_never_an_error(key: str) -> None:
    """Untrusted keys: parsing never raises, and a parsed regex tests without raising."""
    from taverna.engine.lorebook.jsregex import parse_regex_key

    pattern = parse_regex_key(key)
    if pattern is not None:
        assert pattern.test("some text /with/ (brackets) and \\slashes") in (True, False)
