"""World info files read and write losslessly (formats-world-info.md §1-2)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taverna.errors import FormatError, FormatWarning
from taverna.formats.world_info import (
    dump_world_info,
    entry_to_json,
    read_world_info,
    world_info_from_json,
    world_info_to_json,
)
from taverna.model.lorebook import Entry, Lorebook, Position, SelectiveLogic


def strictly_equal(a: Any, b: Any) -> bool:
    """JSON equality that also tells `false` from `0`, `1` from `1.0`, and key order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(strictly_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strictly_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def world_files(shared: Path) -> list[Path]:
    found: list[Path] = []
    for path in sorted((shared / "fixtures" / "sillytavern").rglob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and isinstance(data.get("entries"), dict):
            found.append(path)
    for case in sorted((shared / "oracle" / "cases").glob("*/case.json")):
        for name in json.loads(case.read_text(encoding="utf-8")).get("worlds", []):
            found.append(case.parent / name)
    return found


def test_every_shared_world_file_round_trips(shared: Path) -> None:
    """formats-world-info.md §1: ST writes back the whole object it loaded, unknown keys too."""
    files = world_files(shared)
    assert len(files) >= 4
    for path in files:
        raw = path.read_text(encoding="utf-8")
        book = read_world_info(raw, name=path.stem, file=str(path))
        assert book.entries, path
        assert strictly_equal(world_info_to_json(book), json.loads(raw)), path
        # SillyTavern's own 4-space layout comes back byte for byte (bar the final newline).
        assert dump_world_info(book) == raw.rstrip("\n") or "\t" in raw, path


def test_missing_fields_take_sillytaverns_generation_defaults(st_fixtures: Path) -> None:
    """formats-world-info.md §2 "If missing": Eldoria.json has only ten entry fields."""
    path = st_fixtures / "content" / "Eldoria.json"
    book = read_world_info(path.read_bytes(), name="Eldoria", file=str(path))
    entry = book.entries[0]
    assert "probability" in entry.missing and "useProbability" in entry.missing
    assert entry.use_probability is False  # missing => probability ignored
    assert entry.depth is None and entry.role is None
    assert "probability" not in entry_to_json(entry)


def test_glade_lore_typed_fields(st_fixtures: Path) -> None:
    path = st_fixtures / "handmade" / "user-data" / "worlds" / "Glade Lore.json"
    book = read_world_info(path.read_bytes(), name="Glade Lore", file=str(path))
    first = book.entries[0]
    assert first.sticky == 2 and first.cooldown == 0 and first.delay_until_recursion is False
    assert book.entry(2) is not None and book.entry(2).position is Position.AT_DEPTH  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({}, "entries"),
        ({"entries": "none"}, "entries"),
        ({"entries": [{"uid": 0}]}, "entries"),
        ({"entries": {"0": "text"}}, "entries.0"),
        ({"entries": {"0": {"uid": 0, "key": ["a", {"b": 1}]}}}, "entries.0.key"),
        ({"entries": {"0": {"uid": 0, "position": 9}}}, "entries.0.position"),
        ({"entries": {"0": {"uid": 0, "selectiveLogic": 4}}}, "entries.0.selectiveLogic"),
        ({"entries": {"0": {"uid": 0, "order": [100]}}}, "entries.0.order"),
        ({"entries": {"0": {"uid": 0, "constant": {}}}}, "entries.0.constant"),
        ({"entries": {"0": {"uid": [0]}}}, "entries.0.uid"),
        (
            {"entries": {"0": {"uid": 0, "characterFilter": {"names": {"a": 1}}}}},
            "entries.0.characterFilter.names",
        ),
    ],
)
def test_bad_input_names_file_and_field(document: dict[str, Any], field: str) -> None:
    with pytest.raises(FormatError) as caught:
        world_info_from_json(document, name="Bad", file="Bad.json")
    assert caught.value.file == "Bad.json"
    assert caught.value.field == field
    assert "Bad.json" in str(caught.value)


@pytest.mark.parametrize(
    ("document", "field", "read"),
    [
        ({"entries": []}, "entries", lambda b: b.entries == ()),
        ({"entries": {"0": {"uid": 0, "key": "dragon"}}}, "entries.0.key",
         lambda b: b.entries[0].key == ("dragon",)),
        ({"entries": {"0": {"uid": 0, "key": ["a", 3, None]}}}, "entries.0.key",
         lambda b: b.entries[0].key == ("a", "3")),
        ({"entries": {"0": {"uid": 0, "order": "245"}}}, "entries.0.order",
         lambda b: b.entries[0].order == 245),
        ({"entries": {"0": {"uid": 0, "depth": ""}}}, "entries.0.depth",
         lambda b: b.entries[0].depth == 0),
        ({"entries": {"0": {"uid": 0, "constant": 1}}}, "entries.0.constant",
         lambda b: b.entries[0].constant is True),
        ({"entries": {"0": {"uid": 0, "disable": "false"}}}, "entries.0.disable",
         lambda b: b.entries[0].disable is False),
        ({"entries": {"0": {"uid": 0, "selective": None}}}, "entries.0.selective",
         lambda b: b.entries[0].selective is False),
        ({"entries": {"0": {"uid": 0, "selectiveLogic": None}}}, "entries.0.selectiveLogic",
         lambda b: b.entries[0].selective_logic is SelectiveLogic.AND_ANY),
        ({"entries": {"0": {"uid": 0, "position": "4", "role": "1"}}}, "entries.0.position",
         lambda b: b.entries[0].position is Position.AT_DEPTH and int(b.entries[0].role) == 1),
        ({"entries": {"0": {"uid": 0, "comment": 7}}}, "entries.0.comment",
         lambda b: b.entries[0].comment == "7"),
        ({"entries": {"0": {"uid": "0"}}}, "entries.0.uid", lambda b: b.entries[0].uid == 0),
        ({"entries": {"1": {"uid": 2}}}, "entries.1", lambda b: b.entries[0].uid == 2),
        ({"entries": {"x": {}}}, "entries.x", lambda b: b.entries[0].uid == 0),
        ({"entries": {"0": {"uid": 5}, "1": {"uid": 5}}}, "entries.1",
         lambda b: [e.uid for e in b.entries] == [5, 1]),
        ({"entries": {"0": {"uid": 0, "characterFilter": {"names": "Seraphina"}}}},
         "entries.0.characterFilter.names",
         lambda b: b.entries[0].character_filter.names == ("Seraphina",)),
    ],
)  # fmt: skip
def test_loose_values_are_read_as_sillytavern_reads_them_with_a_warning(
    document: dict[str, Any], field: str, read: Any
) -> None:
    """SillyTavern opens these; taverna reads them the same way and says what it changed."""
    found: list[FormatWarning] = []
    book = world_info_from_json(document, name="Loose", file="Loose.json", warnings=found)
    assert read(book)
    assert any(w.field == field and w.file == "Loose.json" for w in found), found
    # what is written back is read again as it is, without a warning
    again: list[FormatWarning] = []
    twice = world_info_from_json(world_info_to_json(book), name="Loose", warnings=again)
    assert again == []
    assert world_info_to_json(twice) == world_info_to_json(book)


def test_not_json_is_a_format_error() -> None:
    with pytest.raises(FormatError, match=r"broken\.json.*not valid JSON"):
        read_world_info("{entries:", name="broken", file="broken.json")


def test_entry_built_in_code_is_written_with_every_field_in_sillytavern_order() -> None:
    entry = Entry(uid=3, key=("lighthouse",), position=Position.AT_DEPTH, depth=2)
    data = entry_to_json(entry)
    assert list(data)[:5] == ["uid", "key", "keysecondary", "comment", "content"]
    assert data["position"] == 4 and data["selectiveLogic"] == 0 and data["role"] == 0
    assert "characterFilter" not in data and "displayIndex" not in data
    back = world_info_from_json({"entries": {"3": data}}, name="b").entries[0]
    assert back == dataclasses.replace(
        entry, field_order=tuple(data), missing=frozenset({"characterFilter", "displayIndex"})
    )


def test_changed_field_that_was_missing_is_written() -> None:
    book = world_info_from_json({"entries": {"0": {"uid": 0, "key": ["a"]}}}, name="b")
    entry = book.entries[0].changed(selective_logic=SelectiveLogic.NOT_ANY)
    assert entry_to_json(entry) == {"uid": 0, "key": ["a"], "selectiveLogic": 2}


# --- property: any well-typed world file round-trips exactly ---------------------------

_text = st.text(max_size=12)
_int = st.integers(min_value=-5, max_value=10_000)
_num = st.one_of(_int, st.floats(allow_nan=False, allow_infinity=False, width=32))
_values: dict[str, st.SearchStrategy[Any]] = {
    "key": st.lists(_text, max_size=3),
    "keysecondary": st.lists(_text, max_size=3),
    "comment": _text,
    "content": _text,
    "constant": st.booleans(),
    "vectorized": st.booleans(),
    "selective": st.booleans(),
    "selectiveLogic": st.integers(0, 3),
    "addMemo": st.booleans(),
    "order": _num,
    "position": st.integers(0, 7),
    "disable": st.booleans(),
    "excludeRecursion": st.booleans(),
    "preventRecursion": st.booleans(),
    "delayUntilRecursion": st.one_of(st.booleans(), st.integers(0, 5)),
    "probability": _num,
    "useProbability": st.booleans(),
    "depth": st.one_of(st.none(), _int),
    "group": _text,
    "groupOverride": st.booleans(),
    "groupWeight": st.one_of(st.none(), _num),
    "scanDepth": st.one_of(st.none(), _int),
    "caseSensitive": st.one_of(st.none(), st.booleans()),
    "matchWholeWords": st.one_of(st.none(), st.booleans()),
    "useGroupScoring": st.one_of(st.none(), st.booleans()),
    "automationId": _text,
    "role": st.one_of(st.none(), st.integers(0, 2)),
    "sticky": st.one_of(st.none(), _int),
    "cooldown": st.one_of(st.none(), _int),
    "delay": st.one_of(st.none(), _int),
    "displayIndex": st.one_of(st.none(), _int),
    "characterFilter": st.fixed_dictionaries(
        {},
        optional={
            "isExclude": st.booleans(),
            "names": st.lists(_text, max_size=2),
            "tags": st.lists(_text, max_size=2),
            "extra": _text,
        },
    ),
    "outletName": _text,
    "unknownExtension": st.dictionaries(_text, st.one_of(_int, _text, st.none()), max_size=2),
}


@st.composite
def world_documents(draw: st.DrawFn) -> dict[str, Any]:
    entries: dict[str, Any] = {}
    for uid in draw(st.lists(st.integers(0, 50), unique=True, max_size=4)):
        names = draw(st.lists(st.sampled_from(sorted(_values)), unique=True))
        body = {name: draw(_values[name]) for name in names}
        if draw(st.booleans()):
            body = {"uid": uid, **body}
        else:
            body["uid"] = uid
        entries[str(uid)] = body
    document: dict[str, Any] = {"entries": entries}
    if draw(st.booleans()):
        document = {"originalData": {"name": draw(_text)}, **document}
    return document


@settings(max_examples=150, deadline=None)
@given(world_documents())
def test_any_world_document_round_trips(document: dict[str, Any]) -> None:
    book = world_info_from_json(document, name="w")
    assert strictly_equal(world_info_to_json(book), document)
    again = read_world_info(dump_world_info(book), name="w")
    assert again == book


def test_lorebook_edits_make_new_objects() -> None:
    book = Lorebook(name="b", entries=(Entry(uid=0),))
    assert book.free_uid() == 1
    assert Lorebook(name="b", entries=(Entry(uid=0), Entry(uid=2))).free_uid() == 1


_json = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5)),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        _json, st.fixed_dictionaries({"entries": st.dictionaries(st.text(max_size=3), _json)})
    )
)
def test_any_json_is_a_book_or_a_format_error(document: Any) -> None:
    """Bad input gets the project's own error, never a crash of another kind; a book read
    without a warning is written back as it was, and one read with warnings is written as
    what was read, which reads again without any."""
    found: list[FormatWarning] = []
    try:
        book = world_info_from_json(document, name="fuzz", file="fuzz.json", warnings=found)
    except FormatError as error:
        assert error.file == "fuzz.json"
        return
    written = world_info_to_json(book)
    if not found:
        assert strictly_equal(written, document)
        return
    assert all(w.file == "fuzz.json" and w.field for w in found)
    again: list[FormatWarning] = []
    assert strictly_equal(
        world_info_to_json(world_info_from_json(written, name="fuzz", warnings=again)), written
    )
    assert again == []
    assert len(book.entries) == len(document["entries"]) or document["entries"] == []
