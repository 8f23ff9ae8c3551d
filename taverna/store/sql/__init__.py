"""The SQL store: SQLite in a data folder by default, PostgreSQL by URL, one code path.

Each chat write is one transaction: it first bumps the chat's revision with a
compare-and-set (`WHERE revision = :read`), which both detects a stale write and
takes the write lock, then applies its changes and logs each old and new value in
`changes` so the revision can be undone and redone. SQLite runs in WAL mode with
full fsync on commit: a process killed at any moment leaves the last committed
revision.
"""

from taverna.store.sql.contents import content_hash
from taverna.store.sql.engines import DB_FILE, MIGRATIONS, migrate, open_store
from taverna.store.sql.store import SqlStore
from taverna.store.sql.writer import SqlChatWriter

__all__ = [
    "DB_FILE",
    "MIGRATIONS",
    "SqlChatWriter",
    "SqlStore",
    "content_hash",
    "migrate",
    "open_store",
]
