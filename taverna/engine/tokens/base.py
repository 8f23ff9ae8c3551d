"""What a tokenizer is to the engine, and SillyTavern's estimate where no real one fits."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

# public/scripts/tokenizers.js CHARACTERS_PER_TOKEN_RATIO (algo-prompt-assembly.md §6.5).
CHARS_PER_TOKEN = 3.35


@runtime_checkable
class Tokenizer(Protocol):
    """Counts the tokens of a text for one model family.

    `name` identifies the vocabulary (it keys the count cache); `exact` is false
    when the count is an estimate or a stand-in vocabulary, so the ledger can say so.
    """

    @property
    def name(self) -> str: ...

    @property
    def exact(self) -> bool: ...

    def count(self, text: str) -> int: ...


def js_length(text: str) -> int:
    """The length of a text as JavaScript measures it: UTF-16 code units."""
    if text.isascii():
        return len(text)
    # Characters outside the BMP are two code units in JavaScript, one in Python.
    return len(text.encode("utf-16-le")) // 2


@dataclass(frozen=True, slots=True)
class EstimateTokenizer:
    """SillyTavern's "None / Estimated" tokenizer: ceil(length / 3.35).

    The length is counted in UTF-16 code units, as the browser does, so the same
    text gets the same estimate as in SillyTavern.
    """

    name: str = "estimate"
    exact: bool = False

    def count(self, text: str) -> int:
        """The estimated token count of `text`."""
        return math.ceil(js_length(text) / CHARS_PER_TOKEN)
