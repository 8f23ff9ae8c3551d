"""Full-text search over the messages of live chats."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MessageHit:
    """A live message whose text holds every word searched for, with its chat's title and
    active leaf (to tell whether the message is on the chat's path)."""

    chat_id: str
    chat_title: str
    node_id: str
    parent_id: str | None
    role: str
    speaker: str
    depth: int
    hidden: bool
    text: str
    active_leaf_id: str | None


class SearchRepository(ABC):
    """Full-text search over the messages of live chats."""

    @abstractmethod
    def search_messages(
        self,
        terms: Sequence[str],
        *,
        owner: str,
        chat_id: str | None = None,
        limit: int = 50,
    ) -> list[MessageHit]:
        """The newest live messages (of `owner`'s live chats, or of one chat) holding every
        term (folded, see `taverna.model.search_text`) anywhere in their text."""
