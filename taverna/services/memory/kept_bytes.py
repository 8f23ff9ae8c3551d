"""What a process keeps in memory between turns, bounded by its bytes, not its count.

A count bounds nothing: four chats' vectors are 8 KB for four new chats and 800 MB for
four chats of 100,000 messages. Each value here is kept with the bytes it holds; the least
recently used go while the sum is over the budget. The most recent one stays whatever its
size (the turn that asked for it is using it).
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

# What a Python string costs besides its characters, and a list's or dict's slot for it.
STR_OVERHEAD = sys.getsizeof("")
SLOT = 8


def text_bytes(texts: Iterable[str]) -> int:
    """About what the strings hold in memory (one byte a character: ids and most text)."""
    return sum(STR_OVERHEAD + SLOT + len(t) for t in texts)


class KeptBytes(Generic[K, V]):
    """Values by key, least recently used first, their bytes summed under `budget`.

    `size(key, value)` says what a value holds now; a value that grows (a chat's vectors read
    further) is measured again by `put` or `touch`. Not thread-safe: its owner locks."""

    def __init__(self, budget: int, size: Callable[[K, V], int]) -> None:
        self.budget = budget
        self._size = size
        self._values: OrderedDict[K, V] = OrderedDict()
        self._sizes: dict[K, int] = {}
        self.held = 0  # bytes of the values kept

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def get(self, key: K) -> V | None:
        """The value, made the most recently used (None: not kept)."""
        found = self._values.get(key)
        if found is not None:
            self._values.move_to_end(key)
        return found

    def put(self, key: K, value: V) -> V:
        """Keep `value` as the most recently used; older values go past the budget."""
        self._values[key] = value
        self._values.move_to_end(key)
        self._measure(key)
        return value

    def touch(self, key: K) -> None:
        """Measure the value of `key` again (it grew or shrank in place)."""
        if key in self._values:
            self._measure(key)

    def pop(self, key: K) -> V | None:
        found = self._values.pop(key, None)
        self.held -= self._sizes.pop(key, 0)
        return found

    def _measure(self, key: K) -> None:
        size = self._size(key, self._values[key])
        self.held += size - self._sizes.get(key, 0)
        self._sizes[key] = size
        while self.held > self.budget:
            # Neither the most recent nor the one measured (in use by its caller) goes.
            newest = next(reversed(self._values))
            oldest = next((k for k in self._values if k != key and k != newest), None)
            if oldest is None:
                return
            self.pop(oldest)
