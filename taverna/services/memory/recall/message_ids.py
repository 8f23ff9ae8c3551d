"""A chat's message ids by row, and rows by id, held in numpy arrays.

A list of ids and a dict of their rows cost about 160 bytes a message (a string object,
an int object, the list's and the dict's slots): more than the message's sign bits (64
bytes). Here an id is its bytes in one array (36 bytes a UUID), and it is found by its
hash in a sorted array of hashes (16 bytes a message); only the ids added since the last
merge sit in a small dict.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# Ids added since the last merge kept in a dict up to this many, then merged into the
# sorted hashes (a sort of every row: a few milliseconds for 100,000).
MERGE_AT = 4096
# A dict entry and its key's and row's objects, for the ids not merged yet.
RECENT_ENTRY = 160


class MessageIds:
    """Message ids by row (`ids[row]`), and the row of an id (`row(id)`)."""

    def __init__(self) -> None:
        self._ids: np.ndarray[Any, np.dtype[np.bytes_]] = np.zeros(0, dtype="S36")
        self._size = 0
        self._hashes = np.zeros(0, dtype=np.int64)  # sorted, of the merged rows
        self._order = np.zeros(0, dtype=np.int64)  # the row of each hash
        self._recent: dict[str, int] = {}  # rows added since the last merge

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, row: int) -> str:
        if not 0 <= row < self._size:
            raise IndexError(row)
        return bytes(self._ids[row]).decode()

    @property
    def nbytes(self) -> int:
        arrays = self._ids.nbytes + self._hashes.nbytes + self._order.nbytes
        return arrays + len(self._recent) * RECENT_ENTRY

    def row(self, node_id: str) -> int | None:
        """The row of `node_id`, or None when it has none."""
        found = self._recent.get(node_id)
        if found is not None:
            return found
        wanted = hash(node_id)
        at = int(np.searchsorted(self._hashes, wanted))
        encoded = node_id.encode()
        while at < len(self._hashes) and self._hashes[at] == wanted:
            row = int(self._order[at])
            if bytes(self._ids[row]) == encoded:
                return row
            at += 1
        return None

    def add(self, node_id: str) -> int:
        """Give `node_id` the next row (it has none yet)."""
        encoded = node_id.encode()
        width = max(self._ids.dtype.itemsize, len(encoded))
        if self._size == len(self._ids) or width > self._ids.dtype.itemsize:
            grown = np.zeros(max(64, len(self._ids) * 3 // 2), dtype=f"S{width}")
            grown[: self._size] = self._ids[: self._size]
            self._ids = grown
        row = self._size
        self._ids[row] = encoded
        self._size += 1
        self._recent[node_id] = row
        if len(self._recent) >= MERGE_AT:
            self.merge()
        return row

    def merge(self) -> None:
        """Move the ids added since the last merge into the sorted hashes."""
        if not self._recent:
            return
        hashes = np.fromiter((hash(k) for k in self._recent), dtype=np.int64)
        rows = np.fromiter(self._recent.values(), dtype=np.int64)
        hashes = np.concatenate([self._hashes, hashes])
        rows = np.concatenate([self._order, rows])
        order = np.argsort(hashes, kind="stable")
        self._hashes, self._order = hashes[order], rows[order]
        self._recent = {}
