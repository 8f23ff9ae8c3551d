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
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from taverna.services.kept_bytes import KeptBytes, approx_bytes
from taverna.store.repository import Store

__all__ = ["RECHECK", "Kept", "LibraryWatch"]

# Seconds after which a kept answer is read again even with no write heard.
RECHECK = 60.0
# The bytes of the answers kept per question (one per account, say), the least recently
# used dropped first.
KEPT_BYTES = 2 << 20
# What a kept answer's entry holds besides its key and value (its epoch and time).
ENTRY_OVERHEAD = 120

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

    def __init__(self, watch: LibraryWatch, *, budget: int = KEPT_BYTES) -> None:
        self.watch = watch
        # answers are read now and then (once a write was heard): each is measured whole
        self._items: KeptBytes[K, tuple[int, float, V]] = KeptBytes(budget, _entry_bytes)

    @property
    def held(self) -> int:
        """The bytes of the answers kept."""
        return self._items.held

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: K, read: Callable[[], V]) -> V:
        """The kept answer for `key`, or `read()`'s, kept from now on."""
        epoch, now = self.watch.epoch, self.watch.clock()
        found = self._items.get(key)
        if found is not None and found[0] == epoch and now - found[1] < self.watch.recheck:
            return found[2]
        value = read()  # a write counted meanwhile makes this answer stale at once
        self._items.put(key, (epoch, now, value))
        return value

    def clear(self) -> None:
        self._items.clear()


def _entry_bytes(key: object, entry: tuple[int, float, object]) -> int:
    return approx_bytes(key, 2) + approx_bytes(entry[2]) + ENTRY_OVERHEAD
