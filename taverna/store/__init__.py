"""Persistence: the repository interface and its SQL implementation (SQLite or PostgreSQL)."""

from taverna.errors import StaleRevision
from taverna.model.chat import ChatListing
from taverna.store.repository import (
    UNSET,
    ChatRepository,
    ChatWriter,
    Document,
    DocumentRepository,
    NewChat,
    Store,
)
from taverna.store.sql import SqlStore, open_store

__all__ = [
    "UNSET",
    "ChatListing",
    "ChatRepository",
    "ChatWriter",
    "Document",
    "DocumentRepository",
    "NewChat",
    "SqlStore",
    "StaleRevision",
    "Store",
    "open_store",
]
