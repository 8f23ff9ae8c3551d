"""A card's embedded lorebook to and from SillyTavern world info (formats-character-card.md §7)."""

from __future__ import annotations

import json
from pathlib import Path

from taverna.formats.card_json import read_card_json
from taverna.formats.character_book import book_to_lorebook, lorebook_to_book
from taverna.formats.detect import FileKind, read_any
from taverna.formats.png_card import read_png_card
from taverna.formats.world_info import world_info_to_json
from taverna.model.character import CharacterBook
from taverna.model.injection import InjectionRole
from taverna.model.lorebook import Position, SelectiveLogic


def test_seraphina_book_imports_as_sillytavern_does(st_fixtures: Path) -> None:
    card = read_png_card((st_fixtures / "content" / "default_Seraphina.png").read_bytes())
    book = card.character.character_book
    assert book is not None
    lorebook = book_to_lorebook(book, card_name="Seraphina")
    assert lorebook.name == "Eldoria"
    first = lorebook.entries[0]
    assert first.key[0] == "eldoria"
    assert first.position == Position.BEFORE
    assert first.probability == 100  # null in the book -> 100
    assert first.use_probability is False  # false in the book stays false
    assert first.depth == 4 and first.role == InjectionRole.SYSTEM
    assert first.add_memo is False  # empty comment
    raw = world_info_to_json(lorebook)
    assert raw["originalData"] == book.to_json()


def test_kael_book_keeps_sillytavern_extensions(st_fixtures: Path) -> None:
    kael = read_card_json((st_fixtures / "handmade" / "cards" / "Kael.v3.json").read_bytes())
    assert kael.character_book is not None
    lorebook = book_to_lorebook(kael.character_book, card_name="Kael")
    birch, rangers = lorebook.entries
    assert birch.position == Position.AT_DEPTH and birch.role == InjectionRole.USER
    assert birch.depth == 2 and birch.sticky == 2
    assert rangers.selective_logic == SelectiveLogic.AND_ALL
    assert rangers.probability == 50
    assert rangers.groups == ("lore", "rangers")
    assert rangers.comment == "Rangers"  # `name` is ignored, as in SillyTavern
    assert rangers.content.startswith("@@dont_activate")


def test_missing_ids_become_the_index() -> None:
    book = CharacterBook.model_validate(
        {
            "entries": [
                {"keys": ["a"], "content": "A"},
                {"keys": ["b"], "content": "B", "position": "before_char"},
            ]
        }
    )
    lorebook = book_to_lorebook(book, card_name="Nia")
    assert lorebook.name == "Nia's Lorebook"
    assert [e.uid for e in lorebook.entries] == [0, 1]
    assert [e.position for e in lorebook.entries] == [Position.AFTER, Position.BEFORE]
    original = world_info_to_json(lorebook)["originalData"]
    assert [e["id"] for e in original["entries"]] == [0, 1]  # written back into the book
    assert "id" not in book.entries[0].to_json()  # the card's own object is untouched


def test_world_to_book_is_sillytavern_export_shape(st_fixtures: Path) -> None:
    document = read_any((st_fixtures / "handmade" / "user-data" / "worlds" / "Glade Lore.json").read_bytes(),
                        "Glade Lore.json")  # fmt: skip
    book = lorebook_to_book(document.value).to_json()
    assert book["name"] == "Glade Lore"
    assert set(book) == {"name", "entries"}  # no book-level extensions, as SillyTavern writes
    for entry in book["entries"]:
        assert entry["use_regex"] is True
        assert entry["position"] in ("before_char", "after_char")
        assert "characterFilter" not in entry["extensions"] and "addMemo" not in entry
        assert entry["extensions"]["use_group_scoring"] in (True, False)
    ids = [entry["id"] for entry in book["entries"]]
    assert ids == sorted(ids)


def test_standalone_v3_lorebook_file() -> None:
    doc = {"spec": "lorebook_v3", "data": {"name": "Loose", "entries": [
        {"keys": ["k"], "content": "c", "enabled": True, "insertion_order": 5, "use_regex": False,
         "extensions": {}}]}}  # fmt: skip
    document = read_any(json.dumps(doc).encode(), "Loose.json")
    assert document.kind is FileKind.LOREBOOK_V3
    assert document.value.name == "Loose"
    assert document.value.entries[0].order == 5


def test_converted_entries_have_sillytavern_key_order(st_fixtures: Path) -> None:
    card = read_png_card((st_fixtures / "content" / "default_Seraphina.png").read_bytes())
    assert card.character.character_book is not None
    lorebook = book_to_lorebook(card.character.character_book, card_name="Seraphina")
    keys = list(world_info_to_json(lorebook)["entries"]["0"])
    assert keys[:3] == ["key", "keysecondary", "comment"]
    assert keys[-2:] == ["uid", "displayIndex"]


def test_export_fills_sillytavern_defaults_for_absent_fields() -> None:
    from taverna.formats.world_info import world_info_from_json

    sparse = world_info_from_json(
        {"entries": {"3": {"uid": 3, "key": ["k"], "content": "c", "position": 0}}}, name="Sparse"
    )
    entry = lorebook_to_book(sparse).to_json()["entries"][0]
    assert entry["id"] == 3 and entry["enabled"] is True and entry["position"] == "before_char"
    assert "comment" not in entry and "insertion_order" not in entry  # undefined stays out
    ext = entry["extensions"]
    assert ext["position"] == 0
    assert "display_index" not in ext and "exclude_recursion" not in ext
    assert (ext["depth"], ext["role"], ext["probability"], ext["useProbability"]) == (
        4,
        0,
        None,
        False,
    )
    assert (ext["group_weight"], ext["use_group_scoring"], ext["sticky"]) == (None, False, None)
