"""Token counts remembered per (tokenizer, text), so a turn only tokenizes what is new."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from taverna.engine.tokens.base import Tokenizer


@dataclass(slots=True)
class CountCache:
    """A bounded least-recently-used map from (tokenizer name, text) to a count.

    One cache can serve several tokenizers; `max_entries` bounds its memory. It is
    the one mutable thing the engine keeps between turns, and it changes no result:
    a count is a pure function of its key.
    """

    max_entries: int = 50_000
    hits: int = 0
    misses: int = 0
    _counts: OrderedDict[tuple[str, str], int] = field(default_factory=OrderedDict)

    def count(self, tokenizer: Tokenizer, text: str) -> int:
        """The token count of `text` with `tokenizer`, from the cache when known."""
        if not text:
            return 0
        key = (tokenizer.name, text)
        counts = self._counts
        found = counts.get(key)
        if found is not None:
            counts.move_to_end(key)
            self.hits += 1
            return found
        self.misses += 1
        value = tokenizer.count(text)
        counts[key] = value
        if len(counts) > self.max_entries:
            counts.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._counts)


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
