"""Stored embeddings for recall by meaning, and the store's own nearest-neighbour search."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DueMessage:
    """A stored message whose embedding (for the model asked about) is missing or stale."""

    chat_id: str
    node_id: str
    content_hash: str
    role: str
    speaker: str
    text: str


@dataclass(frozen=True, slots=True)
class StoredVector:
    """One message's stored embedding: its `seq` (grows with every write), the message, its
    depth in the tree, and the vector as float32 bytes."""

    seq: int
    node_id: str
    depth: int
    vector: bytes


@dataclass(frozen=True, slots=True)
class StoredSigns:
    """One message's stored embedding as its sign bits (packed, bit i set: component i
    is above zero; 64 bytes for 512 floats): its `seq`, the message, its depth."""

    seq: int
    node_id: str
    depth: int
    signs: bytes


@dataclass(frozen=True, slots=True)
class NearMessage:
    """A message found near a query by the store's own search: its depth in the tree and
    its score (the dot product of its stored unit vector with the query: the cosine)."""

    node_id: str
    depth: int
    score: float


class VectorRepository(ABC):
    """Embeddings for recall by meaning: messages' per chat, other texts' by hash."""

    @abstractmethod
    def messages_due(
        self,
        model: str,
        *,
        limit: int,
        owners: Collection[str] | None = None,
        written: tuple[str, int] | None = None,
    ) -> list[DueMessage]:
        """Up to `limit` live messages with no embedding of their current text: of any
        chat, or (`owners`) of the chats these accounts own; `written` (chat id,
        revision): only that chat's messages written after that revision."""

    @abstractmethod
    def fill_signs(self, *, limit: int) -> int:
        """Store the sign bits of up to `limit` vectors stored without them (written
        before the bits were); how many (0: none is left)."""

    @abstractmethod
    def save_message_vectors(self, model: str, rows: Sequence[tuple[DueMessage, bytes]]) -> int:
        """Store each message's vector (replacing an older one); messages gone meanwhile
        are skipped. How many were stored."""

    @abstractmethod
    def message_vectors(
        self, chat_id: str, model: str, *, after: int = 0, limit: int | None = None
    ) -> list[StoredVector]:
        """The chat's vectors written after `seq` number `after`, in `seq` order (the
        first `limit` of them, if given)."""

    @abstractmethod
    def message_signs(
        self, chat_id: str, model: str, *, after: int = 0, limit: int | None = None
    ) -> list[StoredSigns]:
        """As `message_vectors`, each vector's sign bits instead of its floats."""

    @abstractmethod
    def vectors_at(self, seqs: Sequence[int]) -> dict[int, bytes]:
        """The stored vectors of these `seq` numbers (those still stored), by `seq`."""

    @abstractmethod
    def vector_search(self) -> str:
        """The database's own nearest-neighbour search: "sqlite-vec", "pgvector", or ""
        (none: the caller searches the vectors itself)."""

    @abstractmethod
    def nearest_messages(
        self, chat_id: str, model: str, query: bytes, *, below_depth: int, shortlist: int
    ) -> tuple[list[NearMessage], bool] | None:
        """The chat's messages above depth `below_depth` nearest the unit vector `query`
        (float32 bytes), best first, at most `shortlist`, and whether these are all there
        are (False: asking for a longer shortlist may find more). None when the database
        has no search of its own (`vector_search()` is "")."""

    @abstractmethod
    def node_vectors(self, model: str, node_ids: Sequence[str]) -> dict[str, bytes]:
        """The stored vectors of these messages (those embedded), by node id."""

    @abstractmethod
    def climb(self, chat_id: str, start: str, *, limit: int) -> list[tuple[str, int]]:
        """`(id, depth)` of a node and up to `limit - 1` of its ancestors, the node first."""

    @abstractmethod
    def text_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]:
        """The stored vectors of these text hashes (those there are)."""

    @abstractmethod
    def save_text_vectors(self, model: str, vectors: Mapping[str, bytes]) -> None:
        """Store vectors of texts by hash (one already stored stays)."""
