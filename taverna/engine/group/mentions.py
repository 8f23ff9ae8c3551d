"""Which group members a message names, for names in any script.

SillyTavern splits both the message and each name on ASCII `\\w` (algo-chat-ops.md §5.2),
so `Дмитрий` and `小雪` yield no words and are never mentioned, and `Zoë` is split at its
accent. Here a name is found as a whole word under Unicode rules (letters of every script
are word characters; Chinese, Japanese, Korean, Thai and similar scripts need no boundary,
so `小雪` is found in `我看见小雪走了`), after the text and the name are folded to one case
and one Unicode normal form. A name of several words is mentioned by its whole name or by
any one of its words, as in SillyTavern; a word two members share names only the first of
them (SillyTavern's order), unless the text holds a member's whole name.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from taverna.engine.lorebook.matching import bounded
from taverna.model.lorebook import Boundaries

__all__ = ["fold", "mentioned", "name_words"]

_WORD_SPLIT = re.compile(r"[\W_]+")


def fold(text: str) -> str:
    """`text` in one Unicode normal form and one case, for comparing names."""
    return unicodedata.normalize("NFC", text).casefold()


def name_words(name: str) -> tuple[str, ...]:
    """The folded keys that mention a member: the whole name first, then its words."""
    whole = fold(name).strip()
    if not whole:
        return ()
    words = [w for w in _WORD_SPLIT.split(whole) if w]
    keys = [whole]
    if len(words) > 1:
        keys.extend(w for w in words if w not in keys)
    return tuple(keys)


def _first_at(text: str, key: str) -> int | None:
    """Where `key` first stands in `text` as a whole word (None if nowhere)."""
    start = text.find(key)
    while start >= 0:
        if bounded(text, start, start + len(key), Boundaries.UNICODE):
            return start
        start = text.find(key, start + 1)
    return None


def mentioned(text: str, names: Sequence[str]) -> list[str]:
    """The names `text` mentions, in the order the text first mentions them.

    Ties (two names first found at one place) keep the order of `names`.
    """
    folded = fold(text)
    if not folded:
        return []
    found: list[tuple[int, int, str]] = []
    claimed: set[str] = set()  # a shared word names the first member holding it
    # Whole names first: "John Doe" in the text is Doe's, even after "John Smith".
    for index, name in enumerate(names):
        keys = name_words(name)
        if not keys:
            continue
        at = _first_at(folded, keys[0])
        best = at
        for word in keys[1:]:
            if word in claimed:
                continue
            word_at = _first_at(folded, word)
            # a word only counts when no other whole name holds it at that place
            if (
                word_at is not None
                and (best is None or word_at < best)
                and not _inside_other_name(folded, word_at, word, names, name)
            ):
                best = word_at
        claimed.update(keys[1:])
        if best is not None:
            found.append((best, index, name))
    found.sort()
    return [name for _, _, name in found]


def _inside_other_name(text: str, at: int, word: str, names: Sequence[str], owner: str) -> bool:
    """Whether the `word` at `at` is part of another member's whole name written there."""
    for other in names:
        if other == owner:
            continue
        whole = name_words(other)[:1]
        if not whole or word not in whole[0]:
            continue
        key = whole[0]
        start = text.find(key, max(0, at - len(key)))
        while 0 <= start <= at:
            if start + len(key) >= at + len(word) and bounded(
                text, start, start + len(key), Boundaries.UNICODE
            ):
                return True
            start = text.find(key, start + 1)
    return False
