"""The SQL store: one class composed of the store's parts, on one SQLAlchemy engine."""

from __future__ import annotations

from taverna.store.repository import Store
from taverna.store.sql.accounts import SqlAccounts
from taverna.store.sql.bulk import SqlBulkImport
from taverna.store.sql.chats import SqlChats
from taverna.store.sql.deletion import SqlDeletion
from taverna.store.sql.documents import SqlDocuments
from taverna.store.sql.history import SqlHistory
from taverna.store.sql.paths import SqlPaths
from taverna.store.sql.search import SqlSearch
from taverna.store.sql.sent_prompts import SqlSentPrompts
from taverna.store.sql.token_counts import SqlTokenCounts
from taverna.store.sql.tree import SqlTree
from taverna.store.sql.turns import SqlTurnReads
from taverna.store.sql.vectors import SqlVectors


class SqlStore(
    SqlChats,
    SqlDeletion,
    SqlBulkImport,
    SqlTree,
    SqlPaths,
    SqlTurnReads,
    SqlHistory,
    SqlDocuments,
    SqlSentPrompts,
    SqlTokenCounts,
    SqlVectors,
    SqlSearch,
    SqlAccounts,
    Store,
):
    """The store on one SQLAlchemy engine (SQLite or PostgreSQL)."""
