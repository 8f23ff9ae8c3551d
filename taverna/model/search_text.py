"""Text as message search compares it: case and accents folded, one character at a time.

"Café", "CAFE" and "cafe" fold to the same text, so a search for any finds the others.
Folding works per character (NFKD, combining marks dropped, case folded), so a place in
the folded text maps back to a place in the original (to mark a match in a snippet).
Chinese, Japanese and Korean characters fold to themselves: a search for 灯塔 finds it
inside 那座灯塔很高, with no word splitting needed.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache


@lru_cache(maxsize=4096)
def _fold_char(char: str) -> str:
    decomposed = unicodedata.normalize("NFKD", char)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def fold(text: str) -> str:
    """`text` with case and accents folded away."""
    if text.isascii():
        return text.lower()
    return "".join(_fold_char(c) for c in text)


def fold_with_places(text: str) -> tuple[str, list[int]]:
    """The folded text, and for each of its characters the index in `text` it came from."""
    folded: list[str] = []
    places: list[int] = []
    for index, char in enumerate(text):
        part = _fold_char(char)
        folded.append(part)
        places.extend([index] * len(part))
    return "".join(folded), places


def search_terms(query: str) -> list[str]:
    """The folded words of a query, each to be found in a message (duplicates dropped)."""
    seen: dict[str, None] = {}
    for word in fold(query).split():
        seen.setdefault(word, None)
    return list(seen)
