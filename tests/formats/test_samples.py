"""The product's own sample character and lorebook."""

from __future__ import annotations

from taverna.data import sample_card, sample_lorebook
from taverna.data.make_samples import avatar, character, lorebook
from taverna.formats.card_json import card_to_json
from taverna.formats.character_book import book_to_lorebook, lorebook_to_book
from taverna.formats.world_info import world_info_to_json
from taverna.model.lorebook import Position


def test_sample_card_has_what_a_card_can_show() -> None:
    card = sample_card()
    ione = card.character
    assert ione.name == "Ione Calder"
    assert ione.first_mes and len(ione.alternate_greetings) == 2
    assert ione.mes_example.count("<START>") == 2
    assert ione.depth_prompt.prompt and ione.depth_prompt.depth == 4
    assert ione.linked_world == "Brasswater"
    assert ione.character_book is not None and len(ione.character_book.entries) == 10
    assert card.avatar is not None and card.avatar.startswith(b"\x89PNG")


def test_sample_lorebook_shows_each_kind_of_entry() -> None:
    book = sample_lorebook()
    assert book.name == "Brasswater"
    assert len(book.entries) == 10
    assert any(e.constant for e in book.entries)
    assert any(e.keysecondary for e in book.entries)
    assert any(e.position == Position.AT_DEPTH for e in book.entries)
    assert any(k.startswith("/") for e in book.entries for k in e.key)  # a regex key


def test_shipped_files_match_their_source() -> None:
    book = lorebook()
    assert world_info_to_json(sample_lorebook()) == world_info_to_json(book)
    assert card_to_json(sample_card().character) == card_to_json(character(book))
    assert avatar().startswith(b"\x89PNG")


def test_embedded_book_converts_back_to_the_world() -> None:
    ione = sample_card().character
    assert ione.character_book is not None
    again = book_to_lorebook(ione.character_book, card_name=ione.name)
    original = world_info_to_json(sample_lorebook())["entries"]
    converted = world_info_to_json(again)["entries"]
    assert converted.keys() == original.keys()
    for uid, entry in original.items():
        for key in ("key", "keysecondary", "content", "constant", "position", "depth", "order"):
            assert converted[uid][key] == entry[key], (uid, key)
    # one conversion each way reaches SillyTavern's shape; after that nothing changes
    once = lorebook_to_book(again)
    twice = lorebook_to_book(book_to_lorebook(once, card_name=ione.name))
    assert twice.to_json() == once.to_json()
