"""The repository interface: what the services may ask of a store, whatever its database.

One module a part of the store: chats and their trees (written only inside a unit of
work, `ChatRepository.write`), what a turn reads, library documents, vectors for
recall, full-text search and accounts; `Store` is all of them on one database.
"""

from taverna.store.repository.accounts import Account, AccountRemoval, AccountRepository
from taverna.store.repository.chats import ChatRepository, ChatWriter, NewChat
from taverna.store.repository.documents import Document, DocumentRepository, DocumentVersion
from taverna.store.repository.search import MessageHit, SearchRepository
from taverna.store.repository.store import Store
from taverna.store.repository.turns import SentPromptRepository, TurnReads
from taverna.store.repository.unset import UNSET
from taverna.store.repository.vectors import (
    DueMessage,
    NearMessage,
    StoredSigns,
    StoredVector,
    VectorRepository,
)

__all__ = [
    "UNSET",
    "Account",
    "AccountRemoval",
    "AccountRepository",
    "ChatRepository",
    "ChatWriter",
    "Document",
    "DocumentRepository",
    "DocumentVersion",
    "DueMessage",
    "MessageHit",
    "NearMessage",
    "NewChat",
    "SearchRepository",
    "SentPromptRepository",
    "Store",
    "StoredSigns",
    "StoredVector",
    "TurnReads",
    "VectorRepository",
]
