"""Cutting a text to a number of tokens, with any tokenizer that can count.

A tokenizer here only counts (some are estimates with no vocabulary), so the cut is found
by searching the text for the longest start (or end) whose count is within the limit:
the count of a longer piece of text is never smaller, so a binary search finds it.
"""

from __future__ import annotations

from collections.abc import Callable


def trim_to_tokens(count: Callable[[str], int], text: str, limit: int, *, keep_end: bool) -> str:
    """The longest end (`keep_end`) or start of `text` that counts at most `limit` tokens."""
    if limit <= 0:
        return ""
    if count(text) <= limit:
        return text

    def piece(size: int) -> str:
        return text[len(text) - size :] if keep_end else text[:size]

    low, high = 0, len(text)  # piece(low) fits, piece(high) does not
    while high - low > 1:
        middle = (low + high) // 2
        if count(piece(middle)) <= limit:
            low = middle
        else:
            high = middle
    return piece(low).strip()
