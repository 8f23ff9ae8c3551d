"""The connections of each account, kept between turns until the library changes.

Every turn asks for the connection it goes to, and the answer almost never changes: the
list is read once and kept per account, and read again once a write of the library has
been counted since (`Versions`: the server's `LibraryWatch`, which counts this process's
writes and, through Redis, those of the others), or after `recheck` seconds at the latest.
A write counted while the list was being read leaves that list stale at once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

from taverna.services.connections.connection import Connection

# Accounts whose lists are kept, the least recently used dropped first.
KEPT_ACCOUNTS = 4096


class Versions(Protocol):
    """A count of the library's writes, and how long an answer may be kept regardless."""

    epoch: int
    recheck: float
    clock: Callable[[], float]


class KeptConnections:
    """Each account's connections as last read, with the count of writes they were read at."""

    def __init__(self, versions: Versions, *, size: int = KEPT_ACCOUNTS) -> None:
        self.versions = versions
        self.size = size
        self._lists: OrderedDict[str, tuple[int, float, tuple[Connection, ...]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, owner: str, read: Callable[[], list[Connection]]) -> tuple[Connection, ...]:
        """`owner`'s connections: the kept list while no write was counted since, else
        `read()`'s, kept from now on."""
        epoch, now = self.versions.epoch, self.versions.clock()
        with self._lock:
            found = self._lists.get(owner)
        if found is not None and found[0] == epoch and now - found[1] < self.versions.recheck:
            return found[2]
        listed = tuple(read())
        with self._lock:
            self._lists[owner] = (epoch, now, listed)
            self._lists.move_to_end(owner)
            while len(self._lists) > self.size:
                self._lists.popitem(last=False)
        return listed
