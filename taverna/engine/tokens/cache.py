"""Token counts remembered per (tokenizer, text), so a turn only tokenizes what is new."""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass, field

from taverna.engine.tokens.base import Tokenizer

# Where a byte-pair tokenizer with OpenAI's or Llama 3's pre-tokenizer always starts a
# new piece: after a newline that is followed by neither whitespace nor "/" (o200k's
# punctuation rule can carry "/" across). Counts add up across these points.
_LINE_BREAKS = re.compile(r"\n(?=[^\s/])")
# Texts shorter than this are counted whole.
SPLIT_ABOVE = 2048


@dataclass(slots=True)
class CountCache:
    """A bounded least-recently-used map from (tokenizer name, text) to a count.

    One cache can serve several tokenizers; `max_entries` bounds its memory (texts of
    all tokenizers together; past it, the text used least recently with the tokenizer
    being counted goes). It is the one mutable thing the engine keeps between turns,
    and it changes no result: a count is a pure function of its key.
    """

    max_entries: int = 50_000
    hits: int = 0
    misses: int = 0
    # Per tokenizer name, its texts least recently used first: a text is its own key, not
    # held in a (name, text) pair for each of the many texts a server keeps counted.
    _counts: dict[str, OrderedDict[str, int]] = field(default_factory=dict)
    _size: int = 0

    def count(self, tokenizer: Tokenizer, text: str) -> int:
        """The token count of `text` with `tokenizer`, from the cache when known."""
        if not text:
            return 0
        counts = self._counts.get(tokenizer.name)
        if counts is None:
            counts = self._counts[tokenizer.name] = OrderedDict()
        found = counts.get(text)
        if found is not None:
            counts.move_to_end(text)
            self.hits += 1
            return found
        self.misses += 1
        if len(text) > SPLIT_ABOVE and getattr(tokenizer, "additive_at_lines", False):
            # A long prompt is mostly lines counted on earlier turns: count it by its
            # lines, which gives the same total (see _LINE_BREAKS) and reuses the cache.
            pieces = _split_lines(text)
            value = (
                sum(self.count(tokenizer, piece) for piece in pieces)
                if len(pieces) > 1
                else tokenizer.count(text)
            )
        else:
            value = tokenizer.count(text)
        self._add(counts, text, value)
        return value

    def forget(self, tokenizer: str) -> None:
        """Let every count of the tokenizer named `tokenizer` go (they may be wrong)."""
        counts = self._counts.pop(tokenizer, None)
        if counts is not None:
            self._size -= len(counts)

    def known(self, tokenizer: str, text: str) -> int | None:
        """The count of `text` with the tokenizer named `tokenizer`, if already known."""
        counts = self._counts.get(tokenizer)
        return counts.get(text) if counts is not None else None

    def remember(self, tokenizer: str, text: str, count: int) -> None:
        """Take a count known from elsewhere (a store keeps counts across processes)."""
        if text:
            counts = self._counts.setdefault(tokenizer, OrderedDict())
            if text not in counts:
                self._add(counts, text, count)

    def _add(self, counts: OrderedDict[str, int], text: str, value: int) -> None:
        """Keep a count, letting the least recently used go past `max_entries`."""
        if text not in counts:
            self._size += 1
        counts[text] = value
        while self._size > self.max_entries:
            # the tokenizer's own oldest text, else (it holds only this one) another's
            losing = counts if len(counts) > 1 else max(self._counts.values(), key=len)
            losing.popitem(last=False)
            self._size -= 1

    def __len__(self) -> int:
        return self._size


@dataclass(slots=True)
class TokenCounter:
    """A tokenizer with a cache: what assembly calls to count a text."""

    tokenizer: Tokenizer
    cache: CountCache = field(default_factory=CountCache)

    @property
    def name(self) -> str:
        """The tokenizer's name."""
        return self.tokenizer.name

    @property
    def exact(self) -> bool:
        """Whether counts are the model's real ones."""
        return self.tokenizer.exact

    def count(self, text: str) -> int:
        """The token count of `text`."""
        return self.cache.count(self.tokenizer, text)

    def __call__(self, text: str) -> int:
        return self.cache.count(self.tokenizer, text)


def _split_lines(text: str) -> list[str]:
    """The text cut right after each newline in `_LINE_BREAKS`."""
    pieces: list[str] = []
    start = 0
    for match in _LINE_BREAKS.finditer(text):
        pieces.append(text[start : match.end()])
        start = match.end()
    pieces.append(text[start:])
    return pieces
