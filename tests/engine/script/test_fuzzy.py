"""/fuzzy's scorer: approximate occurrence of an item in a text, as SillyTavern 1.12.6 decides it."""

from __future__ import annotations

from taverna.engine.script.commands.fuzzy import best_match, edits_within, first_match, match_score


def test_edits_within_counts_edits_to_the_closest_stretch() -> None:
    assert edits_within("calm", "it is a calm night") == 0
    assert edits_within("ship", "shp") == 1
    assert edits_within("red", "gren") == 1
    assert edits_within("ship", "zzzz") == 4


def test_a_share_of_letters_above_the_threshold_is_no_match() -> None:
    assert match_score("ship", "shop", 0.4) == 0.25
    assert match_score("ship", "shop", 0.1) is None
    assert match_score("Lamp", "lamp", 0.0) == 0.0  # letters compared without case


def test_first_takes_list_order_and_best_prefers_the_equal_item() -> None:
    assert first_match(["red", "green"], "gren", 0.4) == "red"
    assert best_match(["red", "green"], "gren", 0.4) == "green"
    assert best_match(["a lamp", "lamp"], "lamp", 0.4) == "lamp"
    assert first_match(["storm"], "   ", 0.4) == ""


def test_a_long_item_matches_when_one_of_its_pieces_does() -> None:
    item = "x" * 40 + "the lighthouse keeper"
    assert match_score(item, "the lighthouse keeper waits", 0.4) is not None
