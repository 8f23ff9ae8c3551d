"""SillyTavern's character tags in settings.json (`tags` and `tag_map`) written into the
cards of a data folder imported whole, and into stored characters when settings.json is
imported alone; favourites read from either place a card keeps them."""

from __future__ import annotations

import json
from pathlib import Path

from taverna.formats.card_json import card_from_json, card_to_json
from taverna.services.interchange.character_tags import tag_names
from taverna.services.interchange.library_import import LibraryImport
from taverna.services.library.service import LibraryKind, LibraryService
from taverna.store.sql import SqlStore

SETTINGS = {
    "power_user": {},
    "tags": [
        {"id": "1700000000001", "name": "Sea", "color": ""},
        {"id": "1700000000002", "name": "Knight", "color": ""},
        {"id": "1700000000003", "name": "  ", "color": ""},
    ],
    "tag_map": {
        "Wren.png": ["1700000000001", "1700000000002", "1700000000003"],
        "Gone.png": ["1700000000001"],
        "group-1": ["9999"],
    },
}


def _card(name: str, tags: list[str]) -> bytes:
    data = {"name": name, "first_mes": "Hi.", "tags": tags, "extensions": {}}
    return json.dumps({"spec": "chara_card_v2", "spec_version": "2.0", "data": data}).encode()


def test_the_tag_map_names_each_cards_tags() -> None:
    assert tag_names(SETTINGS) == {"Wren.png": ["Sea", "Knight"], "Gone.png": ["Sea"]}
    assert tag_names({"tags": "nonsense"}) == {}


def test_a_data_folder_gives_its_cards_their_tags(store: SqlStore, tmp_path: Path) -> None:
    folder = tmp_path / "user"
    (folder / "characters").mkdir(parents=True)
    (folder / "characters" / "Wren.json").write_bytes(_card("Wren", ["sea", "Sea"]))
    (folder / "settings.json").write_text(json.dumps(SETTINGS))
    lib = LibraryService(store)
    LibraryImport(lib).import_path(folder)
    found = lib.find(LibraryKind.CHARACTER, "Wren")
    assert found is not None
    character = lib.character(found.id).character
    # the card's own tags first, each tag once
    assert character.tags == ["sea", "Sea", "Knight"]
    assert card_to_json(character)["data"]["tags"] == ["sea", "Sea", "Knight"]


def test_settings_alone_tag_the_characters_of_the_library(store: SqlStore, tmp_path: Path) -> None:
    lib = LibraryService(store)
    lib.import_bytes(_card("Wren", []), "Wren.json")
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(SETTINGS))
    LibraryImport(lib).import_path(path)
    found = lib.find(LibraryKind.CHARACTER, "Wren")
    assert found is not None
    assert lib.character(found.id).character.tags == ["Sea", "Knight"]


def test_a_favourite_is_read_where_a_card_keeps_it() -> None:
    def of(extensions: dict, **top: object) -> bool:
        data = {"name": "X", "extensions": extensions}
        card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": data, **top}
        return card_from_json(card).favorite

    assert of({"fav": True})
    assert of({"fav": "TRUE"})
    assert not of({"fav": False}, fav=True)  # the card's own value first
    assert of({}, fav="true")  # an old card: only the top-level copy
    assert not of({})
