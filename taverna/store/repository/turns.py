"""What building a turn reads of a store, and the prompts kept as sent."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence

from taverna.model.chat import Node, PathTail


class TurnReads(ABC):
    """What building a turn reads: the end of a path, what changed since a revision,
    and the stored token counts of message texts."""

    @abstractmethod
    def path_tail(
        self, chat_id: str, node_id: str, *, limit: int, counted: bool = True
    ) -> PathTail:
        """The last `limit` live messages of the path ending at `node_id` (itself included).

        The climb stops there, so a long chat costs what is read; `before` counts the
        live messages above (left 0, unread, when not `counted`), and `state` is the
        state in force at `node_id`.
        """

    @abstractmethod
    def user_messages_to(self, chat_id: str, node_id: str) -> int:
        """How many live messages of the person are on the path down to `node_id` (the
        author's note interval counts them; a walk of the whole path)."""

    @abstractmethod
    def changed_nodes(self, chat_id: str, since: int) -> frozenset[str]:
        """Ids of the nodes written by revisions after `since` (an undo or a redo counts
        the nodes of the revision it undid or redid)."""

    @abstractmethod
    def get_nodes(self, chat_id: str, node_ids: Sequence[str]) -> list[Node]:
        """These nodes of a chat, in no order; ids it does not have are left out."""

    @abstractmethod
    def token_counts(self, tokenizer: str, texts: Sequence[str]) -> dict[str, int]:
        """The stored token counts of these texts with `tokenizer`, by text."""

    @abstractmethod
    def save_token_counts(self, tokenizer: str, counts: Mapping[str, int]) -> None:
        """Keep token counts of message texts the store holds (others are ignored)."""


class SentPromptRepository(ABC):
    """The prompt each stored reply was generated from, as sent: an opaque record per
    reply, kept apart from the tree and read one reply at a time."""

    @abstractmethod
    def save_sent_prompt(self, chat_id: str, node_id: str, record: bytes) -> None:
        """Keep `record` for the reply `node_id` (replacing one kept before)."""

    @abstractmethod
    def sent_prompt(self, chat_id: str, node_id: str) -> bytes | None:
        """The record kept for the reply `node_id`, or None."""
