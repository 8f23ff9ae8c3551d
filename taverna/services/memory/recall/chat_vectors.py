"""A chat's vectors and sign bits held in memory, kept up to date by what was written since
the last look, and searched there.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from taverna.services.memory.recall.message_ids import MessageIds
from taverna.services.memory.recall.vectors import Vectors
from taverna.store.repository import NearMessage, Store

# Up to this many rows a chat's search scores every row exactly; past it, a shortlist of
# this many rows by sign bits is scored exactly at a time (see `ChatVectors`).
EXACT_ROWS = 20_000
SHORTLIST = 1024
# A chat's sign bits are read this many rows at a time (64 bytes a row; a row stored
# without its bits brings its floats instead).
BITS_READ = 5000


class _RowsByMessage:
    """Message ids and their rows in a chat's in-memory arrays: a message read again keeps
    its row, a new one takes the next."""

    def __init__(self) -> None:
        self.ids = MessageIds()
        self._size = 0

    def _forget_rows(self) -> None:
        self.ids, self._size = MessageIds(), 0

    def _unseen(self, fresh: Sequence[Any]) -> int:
        """How many messages of `fresh` have no row yet."""
        return len({stored.node_id for stored in fresh if self.ids.row(stored.node_id) is None})

    def _place(self, fresh: Sequence[Any]) -> np.ndarray[Any, np.dtype[np.intp]]:
        """The row of each of `fresh`, new messages given the next free rows."""
        rows = np.empty(len(fresh), dtype=np.intp)
        for i, stored in enumerate(fresh):
            row = self.ids.row(stored.node_id)
            if row is None:
                row = self.ids.add(stored.node_id)
                self._size += 1
            rows[i] = row
        return rows


class ChatVectors(_RowsByMessage):
    """One chat's message vectors for one model, in memory, kept up to date by `seq`.

    Beside each vector its sign bits (one bit a dimension): past `EXACT_ROWS` rows a
    search first ranks every row by the Hamming distance of those bits (an eighth of a
    float's memory to read) and then scores a shortlist exactly.
    """

    def __init__(self, chat_id: str, model: str) -> None:
        super().__init__()
        self.chat_id = chat_id
        self.model = model
        self.seq = 0
        self.depths = np.zeros(0, dtype=np.int64)
        self.matrix = np.zeros((0, 0), dtype=np.float32)
        self.bits = np.zeros((0, 0), dtype=np.uint8)

    def refresh(self, store: Store) -> None:
        """Read the vectors written since the last look (a changed message's replace its row)."""
        fresh = store.message_vectors(self.chat_id, self.model, after=self.seq)
        if not fresh:
            return
        dims = len(fresh[0].vector) // 4
        if self.matrix.shape[1] != dims:
            self._allocate(max(len(fresh), 64), dims)
            self._forget_rows()
        new = self._unseen(fresh)
        if self._size + new > self.matrix.shape[0]:
            self._allocate(max(self._size + new, self.matrix.shape[0] * 2), dims)
        rows = self._place(fresh)
        # One copy for all rows read (a chat's first read holds every vector it has).
        block = np.frombuffer(b"".join(s.vector for s in fresh), dtype=np.float32)
        self.matrix[rows] = block.reshape(len(fresh), dims)
        self.depths[rows] = [s.depth for s in fresh]
        self.bits[rows] = np.packbits(self.matrix[rows] > 0, axis=1)
        self.seq = fresh[-1].seq

    def _allocate(self, rows: int, dims: int) -> None:
        """Room for `rows` rows of `dims` dimensions, the rows held so far kept."""
        size = self._size if self.matrix.shape[1] == dims else 0
        matrix = np.zeros((rows, dims), dtype=np.float32)
        depths = np.zeros(rows, dtype=np.int64)
        bits = np.zeros((rows, (dims + 63) // 64 * 8), dtype=np.uint8)
        if size:
            matrix[:size] = self.matrix[:size]
            depths[:size] = self.depths[:size]
            bits[:size] = self.bits[:size]
        self.matrix, self.depths, self.bits = matrix, depths, bits

    def __len__(self) -> int:
        return self._size

    @property
    def nbytes(self) -> int:
        """About what the chat's vectors hold in memory (room to grow included)."""
        return self.matrix.nbytes + self.bits.nbytes + self.depths.nbytes + self.ids.nbytes

    def vector(self, node_id: str) -> Vectors | None:
        row = self.ids.row(node_id)
        return None if row is None else self.matrix[row]

    def ranked(self, query: Vectors, below_depth: int) -> Iterator[tuple[int, float]]:
        """`(row, score)` of the rows above `below_depth`, best first: exactly ranked up
        to `EXACT_ROWS` rows; past that by shortlists of the nearest sign bits, each
        scored exactly."""
        size = self._size
        if not size or below_depth <= 0:
            return
        shallow = self.depths[:size] < below_depth
        if size <= EXACT_ROWS:
            scores: Vectors = self.matrix[:size] @ query
            scores[~shallow] = -np.inf
            for batch in _best_first(scores):
                for row in batch:
                    if scores[row] == -np.inf:
                        return
                    yield int(row), float(scores[row])
            return
        code = np.packbits(query > 0).view(np.uint64)
        counts = np.bitwise_count(self.bits[:size].view(np.uint64) ^ code)
        # Column by column: numpy's row sum over 8 small columns is slower than this.
        distance = counts[:, 0].astype(np.int32)
        for column in range(1, counts.shape[1]):
            distance += counts[:, column]
        distance[~shallow] = np.iinfo(np.int32).max
        for shortlist in _best_first(distance, SHORTLIST, ascending=True):
            shortlist = shortlist[shallow[shortlist]]
            if not len(shortlist):
                return
            exact = self.matrix[shortlist] @ query
            for i in np.argsort(-exact, kind="stable"):
                yield int(shortlist[i]), float(exact[i])


class ChatBits(_RowsByMessage):
    """One chat's sign bits for one model, in memory (64 bytes a message of 512
    dimensions: 6.4 MB for 100,000), kept up to date by `seq`, beside the database's
    search. The shortlist by Hamming distance that the database's search makes
    (`Store.nearest_messages`) is made here from these bits in a few milliseconds, and
    scored exactly from the floats the store holds for just those rows.
    """

    def __init__(self, chat_id: str, model: str) -> None:
        super().__init__()
        self.chat_id = chat_id
        self.model = model
        self.seq = 0
        self.depths = np.zeros(0, dtype=np.int64)
        self.seqs = np.zeros(0, dtype=np.int64)
        self.bits = np.zeros((0, 0), dtype=np.uint64)

    def __len__(self) -> int:
        return self._size

    @property
    def nbytes(self) -> int:
        """About what the chat's sign bits hold in memory (room to grow included)."""
        return self.bits.nbytes + self.depths.nbytes + self.seqs.nbytes + self.ids.nbytes

    def refresh(self, store: Store) -> None:
        """Read the sign bits of the vectors written since the last look, a block at a
        time (a changed message's replace its row)."""
        while True:
            fresh = store.message_signs(self.chat_id, self.model, after=self.seq, limit=BITS_READ)
            if not fresh:
                return
            self._take(fresh)
            if len(fresh) < BITS_READ:
                return

    def _take(self, fresh: Sequence[Any]) -> None:
        words = (len(fresh[0].signs) + 7) // 8
        if self.bits.shape[1] != words:
            self._grow(max(len(fresh), 64), words, keep=False)
        new = self._unseen(fresh)
        if self._size + new > self.bits.shape[0]:
            self._grow(max(self._size + new, self.bits.shape[0] * 2), words, keep=True)
        rows = self._place(fresh)
        width = len(fresh[0].signs)
        packed = np.zeros((len(fresh), words * 8), dtype=np.uint8)
        packed[:, :width] = np.frombuffer(b"".join(s.signs for s in fresh), dtype=np.uint8).reshape(
            len(fresh), width
        )
        self.bits[rows] = packed.view(np.uint64)
        self.depths[rows] = [s.depth for s in fresh]
        self.seqs[rows] = [s.seq for s in fresh]
        self.seq = fresh[-1].seq

    def _grow(self, rows: int, words: int, *, keep: bool) -> None:
        size = self._size if keep else 0
        bits = np.zeros((rows, words), dtype=np.uint64)
        depths = np.zeros(rows, dtype=np.int64)
        seqs = np.zeros(rows, dtype=np.int64)
        if size:
            bits[:size] = self.bits[:size]
            depths[:size] = self.depths[:size]
            seqs[:size] = self.seqs[:size]
        if not keep:
            self._forget_rows()
        self.bits, self.depths, self.seqs = bits, depths, seqs

    def nearest(
        self, store: Store, query: Vectors, *, below_depth: int, shortlist: int
    ) -> tuple[list[NearMessage], bool]:
        """As `Store.nearest_messages`: the `shortlist` rows above `below_depth` nearest
        `query` by sign bits, scored exactly from the stored floats, best first; and
        whether there were no more rows to offer."""
        size = self._size
        words = self.bits.shape[1]
        if not size or below_depth <= 0 or shortlist <= 0 or words * 64 < len(query):
            return [], True
        signs = np.zeros(words * 8, dtype=np.uint8)
        packed = np.packbits(query > 0)
        signs[: len(packed)] = packed
        counts = np.bitwise_count(np.bitwise_xor(self.bits[:size], signs.view(np.uint64)))
        # Column by column: numpy's row sum over a few small columns is slower than this.
        distance = counts[:, 0].astype(np.int16)
        for column in range(1, words):
            distance += counts[:, column]
        # Rows in the window are past every real distance; the distances are small whole
        # numbers, so the shortlist's bound comes from their histogram (no partial sort).
        past = words * 64 + 1
        distance[self.depths[:size] >= below_depth] = past
        histogram = np.bincount(distance, minlength=past + 1)
        complete = size - int(histogram[past]) <= shortlist
        if complete:
            shallow = np.flatnonzero(distance < past)
        else:
            bound = int(np.searchsorted(np.cumsum(histogram), shortlist))
            nearer = np.flatnonzero(distance < bound)
            tied = np.flatnonzero(distance == bound)[: shortlist - len(nearer)]
            shallow = np.concatenate([nearer, tied])
        stored = store.vectors_at([int(self.seqs[row]) for row in shallow])
        kept = [int(row) for row in shallow if int(self.seqs[row]) in stored]
        if not kept:
            return [], complete
        matrix = np.vstack(
            [np.frombuffer(stored[int(self.seqs[row])], dtype=np.float32) for row in kept]
        )
        scores = matrix @ query if matrix.shape[1] == len(query) else np.zeros(len(kept))
        # Exact scores, best first; ties by the order the messages were embedded.
        order = sorted(range(len(kept)), key=lambda i: (-scores[i], int(self.seqs[kept[i]])))
        hits = [
            NearMessage(self.ids[kept[i]], int(self.depths[kept[i]]), float(scores[i]))
            for i in order
        ]
        return hits, complete


def _best_first(
    scores: npt.NDArray[Any], batch: int = 64, *, ascending: bool = False
) -> Iterator[npt.NDArray[np.intp]]:
    """Row numbers by descending score (ascending: by distance), a batch at a time (a
    partial sort: rows past the last batch asked for are never ordered)."""
    key = scores if ascending else -scores
    size = len(scores)
    start = 0
    while start < size:
        end = min(size, start + batch)
        top = np.argpartition(key, end - 1)[:end] if end < size else np.arange(size)
        ordered = top[np.argsort(key[top], kind="stable")]
        yield ordered[start:end]
        start = end
        batch *= 2
