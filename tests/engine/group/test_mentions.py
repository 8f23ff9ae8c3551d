"""Mentions of group members in any script."""

from __future__ import annotations

import pytest

from taverna.engine.group import mentioned

MEMBERS = ["小雪", "Élodie", "Дмитрий", "Mary Jane", "Zoë", "Bob"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我看见小雪走进了房间。", ["小雪"]),  # inside Chinese text, no spaces
        ("小雪，你好", ["小雪"]),
        ("昨天小雪和Bob去了东京", ["小雪", "Bob"]),
        ("Élodie, come here", ["Élodie"]),
        ("ÉLODIE!", ["Élodie"]),
        ("E\u0301lodie is here", ["Élodie"]),  # a decomposed accent is the same name
        ("Привет, Дмитрий!", ["Дмитрий"]),
        ("дмитрий?", ["Дмитрий"]),
        ("Mary Jane waved", ["Mary Jane"]),
        ("Jane waved", ["Mary Jane"]),  # one word of a name of several
        ("zoë smiled", ["Zoë"]),
        ("Bob and Élodie", ["Bob", "Élodie"]),  # in the order the text names them
        ("Élodie and Bob", ["Élodie", "Bob"]),
    ],
)
def test_mentioned(text: str, expected: list[str]) -> None:
    assert mentioned(text, MEMBERS) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Bobby is not here",  # a longer word is another word
        "Zo went home",  # SillyTavern's split finds Zoë in a stray "Zo"; not here
        "Дмитриев пришёл",  # another name that starts the same
        "Élodies",
        "nobody at all",
        "",
    ],
)
def test_not_mentioned(text: str) -> None:
    assert mentioned(text, MEMBERS) == []


def test_a_shared_word_names_the_first_member_and_a_whole_name_its_own() -> None:
    members = ["John Smith", "John Doe"]
    assert mentioned("John, come", members) == ["John Smith"]
    assert mentioned("John Doe, come", members) == ["John Doe"]
    assert mentioned("Doe and Smith", members) == ["John Doe", "John Smith"]


def test_japanese_and_korean_names_inside_their_text() -> None:
    assert mentioned("さくらちゃんが来た", ["さくら"]) == ["さくら"]
    assert mentioned("지민이 왔어", ["지민"]) == ["지민"]
