"""Lorebooks of other programs, converted as SillyTavern's world-info import converts them
(formats-world-info.md §9): NovelAI, Agnai, RisuAI, and a card's book saved on its own."""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image, PngImagePlugin

from taverna.errors import FormatError, FormatWarning
from taverna.formats.character_book import CONVERTED_ORDER, book_to_lorebook
from taverna.formats.detect import FileKind, detect, kind_of_json, read_any, write_document
from taverna.formats.foreign_lorebooks import (
    agnai_to_lorebook,
    character_book_to_lorebook,
    novelai_to_lorebook,
    risu_to_lorebook,
)
from taverna.formats.validation import validate
from taverna.formats.world_info import world_info_from_json, world_info_to_json
from taverna.model.character import CharacterBook
from taverna.services.library.editing import import_lorebook
from taverna.services.library.service import LibraryService
from taverna.store.testing import temporary_store

# What every converted entry has, whatever the source (SillyTavern's template and the
# fields the three converters set alike).
COMMON: dict[str, Any] = {
    "keysecondary": [],
    "constant": False,
    "vectorized": False,
    "selective": False,
    "selectiveLogic": 0,
    "position": 0,
    "excludeRecursion": False,
    "preventRecursion": False,
    "delayUntilRecursion": False,
    "probability": 100,
    "useProbability": True,
    "depth": 4,
    "group": "",
    "groupOverride": False,
    "groupWeight": 100,
    "scanDepth": None,
    "caseSensitive": None,
    "matchWholeWords": None,
    "useGroupScoring": None,
    "automationId": "",
    "role": 0,
    "sticky": None,
    "cooldown": None,
    "delay": None,
}


def entries(book: Any) -> list[dict[str, Any]]:
    return list(world_info_to_json(book)["entries"].values())


def fields(warnings: list[FormatWarning]) -> list[str | None]:
    return [w.field for w in warnings]


# ------------------------------------------------------------------ NovelAI

NOVELAI = {
    "lorebookVersion": 5,
    "entries": [
        {
            "text": "The lamp burns whale oil.",
            "contextConfig": {"budgetPriority": 400, "tokenBudget": 1},
            "displayName": "Lamp",
            "keys": ["lamp", "light"],
            "enabled": True,
            "forceActivation": True,
            "searchRange": 1000,
        },
        {"text": "Storms.", "displayName": "   ", "keys": ["storm"], "enabled": False},
        {"text": "No name.", "keys": ["x"], "enabled": True, "contextConfig": None},
    ],
    "settings": {"orderByKeyLocations": False},
    "categories": [],
}


def test_novelai_entries_map_field_for_field() -> None:
    found: list[FormatWarning] = []
    book = novelai_to_lorebook(NOVELAI, name="Coast", file="coast.json", warnings=found)
    assert book.name == "Coast"
    first, second, third = entries(book)
    assert first == {
        **COMMON,
        "key": ["lamp", "light"],
        "comment": "Lamp",
        "content": "The lamp burns whale oil.",
        "addMemo": True,
        "order": 400,
        "disable": False,
        "uid": 0,
        "displayIndex": 0,
    }
    assert list(first) == list(CONVERTED_ORDER)  # SillyTavern's key order
    # a blank name is kept as the comment, but no memo; enabled false disables
    assert (second["comment"], second["addMemo"], second["disable"]) == ("   ", False, True)
    assert (second["order"], second["uid"], second["displayIndex"]) == (0, 1, 1)
    # no displayName: an empty comment; no contextConfig: order 0
    assert (third["comment"], third["addMemo"], third["order"]) == ("", False, 0)
    # forceActivation is not read: SillyTavern makes no NovelAI entry constant
    assert not any(e["constant"] for e in (first, second, third))
    (note,) = found
    assert note.file == "coast.json" and note.field == "lorebookVersion"
    assert "NovelAI lorebook" in note.message
    for dropped in ("settings", "categories", "entries[].forceActivation", "entries[].searchRange"):
        assert dropped in note.message


def test_novelai_loose_values_are_named_by_the_novelai_fields() -> None:
    doc = {
        "lorebookVersion": 5,
        "entries": [
            {"text": 7, "keys": "solo", "contextConfig": {"budgetPriority": "-5"}},
            {"text": "t", "keys": [], "displayName": None, "enabled": "false"},
        ],
    }
    found: list[FormatWarning] = []
    book = novelai_to_lorebook(doc, name="Loose", file="loose.json", warnings=found)
    first, second = entries(book)
    assert (first["key"], first["content"], first["order"]) == (["solo"], "7", -5)
    assert first["disable"] is True  # no `enabled`: `!undefined` is true in SillyTavern
    assert second["disable"] is False  # the text "false" is truthy in JavaScript
    assert second["comment"] == ""
    assert set(fields(found)) == {
        "lorebookVersion",
        "entries[0].enabled",
        "entries[0].keys",
        "entries[0].text",
        "entries[0].contextConfig.budgetPriority",
        "entries[1].displayName",
        "entries[1].enabled",
    }
    assert all(w.file == "loose.json" for w in found)


def test_novelai_without_an_entry_list_is_refused_naming_the_field() -> None:
    with pytest.raises(FormatError) as error:
        novelai_to_lorebook({"lorebookVersion": 5}, name="x", file="bad.json")
    assert error.value.field == "entries" and error.value.file == "bad.json"
    with pytest.raises(FormatError) as error:
        novelai_to_lorebook({"lorebookVersion": 5, "entries": [{}, 3]}, name="x", file="bad.json")
    assert error.value.field == "entries[1]"


def picture(text: dict[str, str]) -> bytes:
    info = PngImagePlugin.PngInfo()
    for key, value in text.items():
        info.add_text(key, value)
    out = io.BytesIO()
    Image.new("RGB", (4, 4), (1, 2, 3)).save(out, format="PNG", pnginfo=info)
    return out.getvalue()


def b64(doc: object) -> str:
    return base64.b64encode(json.dumps(doc).encode()).decode()


def test_a_novelai_lorebook_png_is_read_from_its_naidata_chunk() -> None:
    data = picture({"naidata": b64(NOVELAI)})
    assert detect(data, "Coast.png") is FileKind.NOVELAI_LOREBOOK
    document = read_any(data, "Coast.png")
    assert document.value.name == "Coast"
    assert document.value.entries[0].content == "The lamp burns whale oil."
    assert fields(list(document.warnings)) == ["naidata:lorebookVersion"]
    # written back as a world file
    again = read_any(write_document(document), "Coast.json")
    assert again.kind is FileKind.WORLD_INFO and again.warnings == ()


def test_a_png_card_with_a_naidata_chunk_is_still_a_card() -> None:
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Mira"}}
    data = picture({"naidata": b64(NOVELAI), "chara": b64(card)})
    assert detect(data, "Mira.png") is FileKind.CARD_PNG


def test_a_naidata_chunk_without_a_novelai_lorebook_is_refused() -> None:
    data = picture({"naidata": b64({"entries": {}})})
    with pytest.raises(FormatError) as error:
        read_any(data, "odd.png")
    assert error.value.field == "naidata" and error.value.file == "odd.png"


# ------------------------------------------------------------------ Agnai

AGNAI = {
    "kind": "memory",
    "name": "Harbour",
    "description": "",
    "entries": [
        {
            "name": "Pier",
            "entry": "The pier burned.",
            "keywords": ["pier"],
            "priority": 10,
            "weight": 20,
            "enabled": True,
        },
        {"entry": "Unnamed.", "keywords": ["u"], "priority": 1, "weight": 5, "enabled": False},
    ],
}


def test_agnai_entries_map_field_for_field() -> None:
    found: list[FormatWarning] = []
    book = agnai_to_lorebook(AGNAI, name="Harbour", file="harbour.json", warnings=found)
    first, second = entries(book)
    assert first == {
        **COMMON,
        "key": ["pier"],
        "comment": "Pier",
        "content": "The pier burned.",
        "addMemo": True,
        "order": 20,
        "disable": False,
        "uid": 0,
        "displayIndex": 0,
    }
    assert list(first) == list(CONVERTED_ORDER)
    # no name: SillyTavern's `comment: undefined` leaves the field out of the file
    assert "comment" not in second and second["addMemo"] is False
    assert (second["order"], second["disable"]) == (5, True)
    (note,) = found
    assert note.field == "kind" and "Agnai memory book" in note.message
    assert "entries[].priority" in note.message  # priority is not carried over


def test_agnai_loose_values_are_named_by_the_agnai_fields() -> None:
    doc = {"kind": "memory", "entries": [{"entry": "e", "keywords": "k", "weight": "3"}]}
    found: list[FormatWarning] = []
    (entry,) = entries(agnai_to_lorebook(doc, name="A", file="a.json", warnings=found))
    assert (entry["key"], entry["order"], entry["disable"]) == (["k"], 3, True)
    assert set(fields(found)) == {
        "kind",
        "entries[0].enabled",
        "entries[0].keywords",
        "entries[0].weight",
    }


# ------------------------------------------------------------------ RisuAI

RISU = {
    "type": "risu",
    "ver": 1,
    "data": [
        {
            "key": " lamp, lantern ,light",
            "secondkey": "",
            "insertorder": 100,
            "comment": "Lamp",
            "content": "A lens from a steamer.",
            "mode": "normal",
            "alwaysActive": False,
            "selective": False,
            "activationPercent": None,
            "useRegex": False,
        },
        {
            "key": "storm",
            "secondkey": "night,dark ",
            "insertorder": 80,
            "comment": "Storm",
            "content": "The bell rings.",
            "alwaysActive": True,
            "selective": True,
            "activationPercent": 0,
        },
        {"key": "", "insertorder": 1, "content": "c", "activationPercent": 40},
    ],
}


def test_risu_entries_map_field_for_field() -> None:
    found: list[FormatWarning] = []
    book = risu_to_lorebook(RISU, name="Risu", file="risu.json", warnings=found)
    first, second, third = entries(book)
    assert first == {
        **COMMON,
        "key": ["lamp", "lantern", "light"],
        "comment": "Lamp",
        "content": "A lens from a steamer.",
        "addMemo": True,
        "order": 100,
        "disable": False,
        "uid": 0,
        "displayIndex": 0,
    }
    assert list(first) == list(CONVERTED_ORDER)
    assert second["keysecondary"] == ["night", "dark"]
    assert (second["constant"], second["selective"], second["order"]) == (True, True, 80)
    # activationPercent is both the probability and, as JavaScript reads it, the dice switch
    assert (second["probability"], second["useProbability"]) == (0, False)
    assert (third["probability"], third["useProbability"]) == (40, True)
    # `"".split(",")` is one empty key; absent fields stay out of the file
    assert third["key"] == [""]
    assert "comment" not in third and "constant" not in third and "selective" not in third
    (note,) = found
    assert note.field == "type" and "RisuAI lorebook" in note.message
    assert "data[].mode" in note.message and "ver" in note.message


def test_risu_keys_of_the_wrong_type() -> None:
    found: list[FormatWarning] = []
    doc = {"type": "risu", "data": [{"content": "a"}, {"key": 5, "secondkey": 7, "content": "b"}]}
    first, second = entries(risu_to_lorebook(doc, name="R", file="r.json", warnings=found))
    assert first["key"] == [] and second["key"] == ["5"] and second["keysecondary"] == ["7"]
    assert set(fields(found)) == {"type", "data[0].key", "data[1].key", "data[1].secondkey"}
    with pytest.raises(FormatError) as error:
        risu_to_lorebook({"type": "risu", "data": [{"key": {"a": 1}}]}, name="R", file="r.json")
    assert error.value.field == "data[0].key"
    with pytest.raises(FormatError) as error:
        risu_to_lorebook({"type": "risu", "data": {}}, name="R", file="r.json")
    assert error.value.field == "data"


# ------------------------------------------------------------------ a card's book on its own

BOOK = {
    "name": "Marla's Lorebook",
    "extensions": {},
    "entries": [
        {
            "keys": ["lamp"],
            "content": "Marla trims the wick.",
            "extensions": {"position": 4, "depth": 2},
            "enabled": True,
            "insertion_order": 100,
            "comment": "Wick",
        },
        {"keys": "storm", "content": "Storm watch.", "enabled": False, "insertion_order": "9"},
    ],
}


def test_a_character_book_file_converts_as_import_card_lore() -> None:
    found: list[FormatWarning] = []
    book = character_book_to_lorebook(BOOK, name="marla", file="marla.json", warnings=found)
    card_way = book_to_lorebook(validate(CharacterBook, BOOK), card_name="Marla")
    assert book.name == "marla"  # named by the file, as SillyTavern names an import
    assert world_info_to_json(book) == world_info_to_json(card_way)
    assert world_info_to_json(book)["originalData"]["name"] == "Marla's Lorebook"
    first, second = entries(book)
    assert (first["position"], first["depth"], first["comment"]) == (4, 2, "Wick")
    assert (second["key"], second["order"], second["disable"]) == (["storm"], 9, True)
    assert fields(found) == ["entries", "entries[1].keys", "entries[1].insertion_order"]
    assert "character_book" in found[0].message


# ------------------------------------------------------------------ detection and import


@pytest.mark.parametrize(
    ("doc", "kind"),
    [
        (NOVELAI, FileKind.NOVELAI_LOREBOOK),
        ({"lorebookVersion": None, "entries": []}, FileKind.NOVELAI_LOREBOOK),
        (AGNAI, FileKind.AGNAI_MEMORY_BOOK),
        (RISU, FileKind.RISU_LOREBOOK),
        (BOOK, FileKind.CHARACTER_BOOK),
        ({"entries": []}, FileKind.WORLD_INFO),
        ({"entries": {}}, FileKind.WORLD_INFO),
        ({"spec": "lorebook_v3", "data": BOOK}, FileKind.LOREBOOK_V3),
        # a prompt export has `type` and `data` too
        ({"version": 1, "type": "chat", "data": {"prompts": []}}, FileKind.PROMPT_EXPORT),
    ],
)
def test_detection(doc: Any, kind: FileKind) -> None:
    assert kind_of_json(doc) is kind


@pytest.mark.parametrize(
    ("doc", "kind"),
    [
        (NOVELAI, "novelai-lorebook"),
        (AGNAI, "agnai-memory-book"),
        (RISU, "risu-lorebook"),
        (BOOK, "character-book"),
    ],
)
def test_each_is_imported_as_a_lorebook_with_its_warnings(
    doc: Any, kind: str, tmp_path: Path
) -> None:
    data = json.dumps(doc).encode()
    assert read_any(data, "Book.json").kind.value == kind
    with temporary_store("sqlite", tmp_path) as store:
        library = LibraryService(store)
        item = import_lorebook(library, data, "Book.json")  # the lorebook page's import
        stored = store.get_document(item.id)
        assert stored.name == "Book"
        assert item.warnings and item.warnings[0].file == "Book.json"
        again: list[FormatWarning] = []
        read = world_info_from_json(dict(stored.data), name=stored.name, warnings=again)
        assert again == [] and len(read.entries) == len(doc.get("entries") or doc.get("data"))


# ------------------------------------------------------------------ any values


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.sampled_from(["", "0", "12", "false", "a, b ,", " 7 "]),
)
# mostly values SillyTavern's converters take, sometimes a list or an object anywhere
_values = st.one_of(
    _scalars,
    _scalars,
    _scalars,
    st.lists(_scalars, max_size=3),
    st.dictionaries(st.sampled_from(["budgetPriority", "x"]), _scalars, max_size=2),
)
_NAMES = {
    "novelai": ("entries", ["keys", "text", "displayName", "contextConfig", "enabled"]),
    "agnai": ("entries", ["keywords", "entry", "name", "weight", "enabled", "priority"]),
    "risu": ("data", ["key", "secondkey", "comment", "content", "alwaysActive", "selective",
                      "insertorder", "activationPercent"]),
}  # fmt: skip
_CONVERT = {"novelai": novelai_to_lorebook, "agnai": agnai_to_lorebook, "risu": risu_to_lorebook}


@st.composite
def _foreign(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    source = draw(st.sampled_from(sorted(_NAMES)))
    list_key, names = _NAMES[source]
    items = draw(
        st.lists(st.dictionaries(st.sampled_from(names), _values, max_size=len(names)), max_size=4)
    )
    marker = {"novelai": {"lorebookVersion": 5}, "agnai": {"kind": "memory"}}.get(
        source, {"type": "risu"}
    )
    return source, {**marker, list_key: items}


@settings(max_examples=300, deadline=None)
@given(_foreign())
def test_any_foreign_lorebook_converts_to_a_clean_world_file_or_names_the_bad_field(
    case: tuple[str, dict[str, Any]],
) -> None:
    source, doc = case
    found: list[FormatWarning] = []
    try:
        book = _CONVERT[source](doc, name="Any", file="any.json", warnings=found)
    except FormatError as error:
        # named by the source file's own field: `data[2].insertorder`, not `entries.2.order`
        list_key = _NAMES[source][0]
        assert error.file == "any.json" and error.field
        assert re.fullmatch(rf"{list_key}\[\d+\]\.[\w.]+", error.field), error.field
        return
    assert len(book.entries) == len(doc.get("entries", doc.get("data")))
    assert found[0].field in ("lorebookVersion", "kind", "type")  # the conversion comes first
    assert all(w.file == "any.json" and w.field for w in found)
    again: list[FormatWarning] = []
    read = world_info_from_json(world_info_to_json(book), name="Any", warnings=again)
    assert again == [] and read == book
