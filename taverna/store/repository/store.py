"""A whole store: every repository of the store's parts, opened on one database."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

from taverna.store.repository.accounts import AccountRepository
from taverna.store.repository.chats import ChatRepository
from taverna.store.repository.documents import DocumentRepository
from taverna.store.repository.search import SearchRepository
from taverna.store.repository.turns import SentPromptRepository, TurnReads
from taverna.store.repository.vectors import VectorRepository


class Store(
    ChatRepository,
    TurnReads,
    SentPromptRepository,
    DocumentRepository,
    VectorRepository,
    SearchRepository,
    AccountRepository,
):
    """A whole store: chats, library, vectors, search and accounts, on one database."""

    url: str

    def close(self) -> None:
        """Release the database connections."""

    def reading(self) -> AbstractContextManager[None]:
        """A span of reads only, on one thread: its reads may share one connection and
        transaction (fewer round trips, one consistent view). Nothing inside may write."""
        return nullcontext()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
