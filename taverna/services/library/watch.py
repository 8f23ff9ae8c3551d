"""What the background work of a turn keeps of the stored settings, and when it is stale.

After every turn the server asks the same questions of each account's stored documents:
is recall on, and with which model; are automatic summaries on; has a Quick Reply set an
automation. The answer almost never changes, and asking costs database round trips each
time. A `LibraryWatch` lets the answers be kept: it counts the writes of documents, those
of this process (the store tells it after each commit) and those of the other server
processes (announced through Redis), and a `Kept` answer is read again once a write was
counted after it was read. A write counted while an answer was being read leaves that
answer stale, so nothing read before a commit outlives it. As a last resort (a process
sharing the database without Redis, a Redis message lost) every answer is read again
after `recheck` seconds.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from taverna.store.repository import Store

__all__ = ["RECHECK", "Kept", "LibraryWatch"]

# Seconds after which a kept answer is read again even with no write heard.
RECHECK = 60.0
# Answers kept per question (one per account, say), the oldest dropped first.
KEPT = 4096

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LibraryWatch:
    """Counts the writes of stored documents, here and (through `announce`) elsewhere."""

    def __init__(
        self, *, recheck: float = RECHECK, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.recheck = recheck
        self.clock = clock
        self.epoch = 0
        self._lock = threading.Lock()
        # Set where other processes share the database: tell them of a write here.
        self.announce: Callable[[], None] | None = None

    def watch(self, store: Store) -> LibraryWatch:
        """Count the writes of `store` (and announce them); returns self."""
        store.watch_documents(self.written)
        return self

    def written(self) -> None:
        """A write of documents in this process was committed."""
        self.heard()
        if self.announce is not None:
            self.announce()

    def heard(self) -> None:
        """Another process wrote documents (or may have: its messages were missed)."""
        with self._lock:
            self.epoch += 1


class Kept(Generic[K, V]):
    """Answers to one question, each kept until the library changes (see the module doc)."""

    def __init__(self, watch: LibraryWatch, *, size: int = KEPT) -> None:
        self.watch = watch
        self.size = size
        self._items: OrderedDict[K, tuple[int, float, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, read: Callable[[], V]) -> V:
        """The kept answer for `key`, or `read()`'s, kept from now on."""
        epoch, now = self.watch.epoch, self.watch.clock()
        with self._lock:
            found = self._items.get(key)
        if found is not None and found[0] == epoch and now - found[1] < self.watch.recheck:
            return found[2]
        value = read()  # a write counted meanwhile makes this answer stale at once
        with self._lock:
            self._items[key] = (epoch, now, value)
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
