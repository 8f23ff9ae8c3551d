"""SillyTavern's loose values read as SillyTavern reads them (formats/coercion.py)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taverna.errors import FormatWarning
from taverna.formats.card_json import card_from_json, card_to_json
from taverna.formats.coercion import (
    Unfit,
    as_bool,
    as_number,
    as_numbers,
    as_object,
    as_text,
    as_texts,
)
from taverna.formats.world_info import assign_uids
from taverna.model.js_number import parse_js_number

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(["245", " 4 ", "", "0x1A", "1e3", "-0", ".5", "true", "FALSE", "abc", "1_0"]),
)


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("", 0), ("  ", 0), ("245", 245), (" 4\n", 4), ("-7", -7), ("+3", 3), (".5", 0.5),
        ("5.", 5), ("1e3", 1000), ("2.5E-1", 0.25), ("0x1A", 26), ("0o17", 15), ("0b101", 5),
        ("Infinity", math.inf), ("-Infinity", -math.inf), ("\u00a012\u3000", 12),
    ],
)  # fmt: skip
def test_parse_js_number_reads_what_javascript_reads(text: str, number: float) -> None:
    assert parse_js_number(text) == number


@pytest.mark.parametrize(
    "text", ["abc", "1_000", "inf", "nan", "NaN", "0x", "1e", "--1", "1 2", "١٢", "-0x10", "12px"]
)
def test_parse_js_number_gives_nan_where_javascript_does(text: str) -> None:
    assert parse_js_number(text) is None


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_number_written_as_text_reads_back_as_itself(number: float) -> None:
    for text in (repr(number), f"  {number!r}\t", json.dumps(number)):
        assert parse_js_number(text) == number


@given(st.integers(min_value=-(2**53), max_value=2**53))
def test_an_integer_written_as_text_reads_back_as_an_integer(number: int) -> None:
    read, note = as_number(str(number), 0, integer=True)
    assert read == number and type(read) is int
    assert note is not None and str(number) in note


@settings(max_examples=300)
@given(_scalars, st.booleans())
def test_as_number_gives_a_number_and_says_when_it_changed_something(
    value: Any, integer: bool
) -> None:
    read, note = as_number(value, 4, integer=integer)
    assert isinstance(read, int | float) and not isinstance(read, bool)
    assert not integer or isinstance(read, int)
    was_number = isinstance(value, int | float) and not isinstance(value, bool)
    if was_number and (not integer or float(value).is_integer()):
        assert note is None and read == value
    else:
        assert note
    assert as_number(read, 4, integer=integer)[1] is None  # read once, stable


@settings(max_examples=300)
@given(_scalars)
def test_as_bool_gives_a_boolean(value: Any) -> None:
    read, note = as_bool(value, True)
    assert isinstance(read, bool)
    assert (note is None) == isinstance(value, bool)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        assert read == (value.strip().lower() == "true")


@settings(max_examples=300)
@given(_scalars)
def test_as_text_gives_text_whose_number_is_the_number(value: Any) -> None:
    read, note = as_text(value, "")
    assert isinstance(read, str)
    assert (note is None) == isinstance(value, str)
    if isinstance(value, int | float) and not isinstance(value, bool):
        assert parse_js_number(read) == float(value)  # String(n) reads back as n (a double)


@given(st.one_of(_scalars, st.lists(_scalars, max_size=5)))
def test_as_texts_gives_a_list_of_texts_read_once(value: Any) -> None:
    read, note = as_texts(value)
    assert isinstance(read, list) and all(isinstance(x, str) for x in read)
    assert as_texts(read)[1] is None
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        assert note is None and read is value


@given(st.one_of(_scalars, st.lists(st.one_of(st.none(), st.integers(), st.text()), max_size=5)))
def test_as_numbers_gives_numbers_or_refuses(value: Any) -> None:
    try:
        read, _ = as_numbers(value, integer=True)
    except Unfit:
        return
    assert all(isinstance(x, int) and not isinstance(x, bool) for x in read)


@pytest.mark.parametrize(
    ("read", "value"),
    [
        (lambda v: as_number(v, 0), [1]), (lambda v: as_number(v, 0), {"a": 1}),
        (lambda v: as_bool(v, False), []), (lambda v: as_text(v, ""), {"a": "b"}),
        (as_texts, {"a": 1}), (as_texts, ["a", ["b"]]), (lambda v: as_object(v, {}), [1]),
        (lambda v: as_object(v, {}), "x"),
        # `1e999` in a file is an infinite float: no whole number to read it as
        (lambda v: as_number(v, 0, integer=True), float("inf")),
        (lambda v: as_numbers(v, integer=True), [float("-inf")]),
    ],
)  # fmt: skip
def test_a_value_no_rule_fits_is_refused(read: Any, value: Any) -> None:
    with pytest.raises(Unfit):
        read(value)


@given(
    st.lists(
        st.tuples(
            st.one_of(st.integers(0, 40).map(str), st.text(max_size=3)),
            st.one_of(st.none(), st.integers(-3, 40)),
        ),
        max_size=30,
        unique_by=lambda pair: pair[0],
    )
)
def test_assign_uids_keeps_every_entry_and_gives_each_its_own_uid(
    pairs: list[tuple[str, int | None]],
) -> None:
    keys = [key for key, _ in pairs]
    own = [uid for _, uid in pairs]
    uids = assign_uids(keys, own)
    assert len(uids) == len(keys) and len(set(uids)) == len(uids)
    seen: set[int] = set()
    for uid, mine in zip(uids, own, strict=True):
        if mine is not None and mine not in seen:
            assert uid == mine  # the first entry with a uid keeps it
        if mine is not None:
            seen.add(mine)
    # a book already numbered by its keys is left as it is
    assert assign_uids([str(u) for u in uids], uids) == uids


_card_values = st.fixed_dictionaries(
    {},
    optional={
        "description": _scalars,
        "alternate_greetings": st.one_of(_scalars, st.lists(_scalars, max_size=3)),
        "tags": st.one_of(_scalars, st.lists(_scalars, max_size=3)),
        "character_version": _scalars,
        "creator": _scalars,
        "extensions": st.fixed_dictionaries(
            {},
            optional={
                "talkativeness": _scalars,
                "fav": _scalars,
                "depth_prompt": st.one_of(
                    st.none(),
                    st.fixed_dictionaries(
                        {}, optional={"depth": _scalars, "prompt": _scalars, "role": _scalars}
                    ),
                ),
            },
        ),
    },
)


@settings(max_examples=200, deadline=None)
@given(_card_values)
def test_any_loose_scalar_in_a_card_is_read_and_then_stays_as_read(data: dict[str, Any]) -> None:
    """A card whose fields hold any JSON scalars opens, with a warning for each change;
    written back, it opens again with none."""
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "A", **data}}
    found: list[FormatWarning] = []
    character = card_from_json(card, file="c.json", warnings=found)
    assert all(w.file == "c.json" and (w.field or "").startswith("data.") for w in found)
    assert isinstance(character.depth_prompt.depth, int | float)
    again: list[FormatWarning] = []
    reread = card_from_json(card_to_json(character), file="c.json", warnings=again)
    assert again == []
    assert reread.data_json() == character.data_json()
