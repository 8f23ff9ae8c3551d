"""What a process keeps in memory between turns, bounded by its bytes, not its count.

A count bounds nothing: four chats' vectors are 8 KB for four new chats and 800 MB for
four chats of 100,000 messages. Each value here is kept with the bytes it holds; the least
recently used go while the sum is over the budget. The most recent one stays whatever its
size (the turn that asked for it is using it).

Every domain keeps something between turns, so this sits beside the domains, under none.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

# What a Python string costs besides its characters, and a list's or dict's slot for it.
STR_OVERHEAD = sys.getsizeof("")
SLOT = 8


def text_bytes(texts: Iterable[str]) -> int:
    """About what the strings hold in memory (one byte a character: ids and most text)."""
    return sum(STR_OVERHEAD + SLOT + len(t) for t in texts)


# How deep and how wide `approx_bytes` looks: past that an object counts as its own size.
_DEPTH = 4
_WIDTH = 4096


def approx_bytes(value: object, depth: int = _DEPTH) -> int:
    """About what a small plain value holds: itself, and its items, fields and attributes
    down to `depth` levels (a shared object is counted each time it is reached, so this
    errs high). For settings and answers read now and then, not for a turn's hot path."""
    size = sys.getsizeof(value, 64)
    if depth <= 0 or isinstance(value, str | bytes | int | float | bool | type(None)):
        return size
    items: Iterable[Any]
    if isinstance(value, Mapping):
        items = (x for pair in list(value.items())[:_WIDTH] for x in pair)
    elif isinstance(value, list | tuple | set | frozenset):
        items = list(value)[:_WIDTH]
    elif hasattr(value, "__dict__"):
        items = list(vars(value).values())
    elif hasattr(type(value), "__slots__"):
        names = [n for c in type(value).__mro__ for n in getattr(c, "__slots__", ())]
        items = [getattr(value, n) for n in names if hasattr(value, n)]
    else:
        return size
    return size + sum(approx_bytes(item, depth - 1) for item in items)


class KeptBytes(Generic[K, V]):
    """Values by key, least recently used first, their bytes summed under `budget`.

    `size(key, value)` says what a value holds now; a value that grows (a chat's vectors read
    further) is measured again by `put` or `touch`. Each call holds the map's own lock
    (`size` and `gone` are called under it)."""

    def __init__(
        self,
        budget: int,
        size: Callable[[K, V], int],
        *,
        gone: Callable[[K, V], object] | None = None,
    ) -> None:
        """`gone` is told of each value let go to keep under the budget."""
        self.budget = budget
        self._size = size
        self._gone = gone
        self._values: OrderedDict[K, V] = OrderedDict()
        self._sizes: dict[K, int] = {}
        self.held = 0  # bytes of the values kept
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __getitem__(self, key: K) -> V:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)

    def get(self, key: K) -> V | None:
        """The value, made the most recently used (None: not kept)."""
        with self._lock:
            found = self._values.get(key)
            if found is not None:
                self._values.move_to_end(key)
            return found

    def put(self, key: K, value: V) -> V:
        """Keep `value` as the most recently used; older values go past the budget."""
        with self._lock:
            self._values[key] = value
            self._values.move_to_end(key)
            self._measure(key)
            return value

    def touch(self, key: K) -> None:
        """Measure the value of `key` again (it grew or shrank in place)."""
        with self._lock:
            if key in self._values:
                self._measure(key)

    def pop(self, key: K) -> V | None:
        with self._lock:
            found = self._values.pop(key, None)
            self.held -= self._sizes.pop(key, 0)
            return found

    def keys(self) -> list[K]:
        """The keys kept, least recently used first."""
        with self._lock:
            return list(self._values)

    def values(self) -> list[V]:
        """The values kept, least recently used first."""
        with self._lock:
            return list(self._values.values())

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._sizes.clear()
            self.held = 0

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
            value = self.pop(oldest)
            if self._gone is not None and value is not None:
                self._gone(oldest, value)
