"""The SQLite engine: WAL, writes that take turns, and files only their owner can read.

SQLite lets one transaction write at a time; a writer that finds the lock taken sleeps
and tries again (1, 2, 5 ... 100 ms apart), so two busy threads of one process starve
each other: a chat written while another is removed in the background waited most of
a second for its turn, or the removal waited for a lull that never came. Writers of
one engine therefore queue in arrival order before they take the lock, each woken the
moment the one before it has committed. Writers in other processes still meet SQLite's
own wait.

The database holds every message: the file, its `-wal` and `-shm` companions (SQLite
gives them the database's permissions) and the folder it is made in are the owner's
alone.

The driver is `sqlean` (sqlean-py: the standard library's sqlite3 module built on a
recent SQLite that may load extensions), so that sqlite-vec is loaded into every
connection and recall's nearest-neighbour search runs in the database. Where sqlean or
sqlite-vec cannot be loaded, the standard library's driver is used and the log says
recall searches in the process instead.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

log = logging.getLogger(__name__)

FILE_MODE = 0o600
FOLDER_MODE = 0o700
# Each pooled connection's page cache, in KB: its own memory for the process's life.
PAGE_CACHE_KB = 8192


def _vector_driver() -> tuple[ModuleType, Any]:
    """The DB-API module to open SQLite with and the sqlite-vec loader (None: none)."""
    try:
        import sqlean
        import sqlite_vec
    except ImportError as exc:
        log.warning("sqlite-vec is not available (%s): recall searches in the process", exc)
        return sqlite3, None
    try:
        probe = sqlean.connect(":memory:")
        try:
            probe.enable_load_extension(True)
            sqlite_vec.load(probe)
            probe.execute("SELECT vec_version()").fetchone()
        finally:
            probe.close()
    except Exception as exc:
        log.warning("sqlite-vec could not be loaded (%s): recall searches in the process", exc)
        return sqlite3, None
    return sqlean, sqlite_vec


_DRIVER: list[tuple[ModuleType, Any]] = []  # found on first use


def vector_driver() -> tuple[ModuleType, Any]:
    """The driver and sqlite-vec loader, looked for once a process."""
    if not _DRIVER:
        _DRIVER.append(_vector_driver())
    return _DRIVER[0]


class WriteTurns:
    """A first-come, first-served lock: the writers of one engine, one after another.

    A writer that waits longer than `patience` seconds gives up as SQLite itself would
    ("database is locked"), so a stuck writer cannot hang the others for good.
    """

    def __init__(
        self, patience: float = 30.0, error: type[Exception] = sqlite3.OperationalError
    ) -> None:
        self.patience = patience
        self.error = error  # the driver's OperationalError
        self._changed = threading.Condition()
        self._next = 0  # the ticket the next writer draws
        self._serving = 0  # the ticket whose turn it is
        self._abandoned: set[int] = set()

    def take(self) -> None:
        with self._changed:
            ticket = self._next
            self._next += 1
            ready = self._changed.wait_for(lambda: ticket == self._serving, self.patience)
            if not ready:
                self._abandoned.add(ticket)
                raise self.error("database is locked (waited for another write)")

    def give_back(self) -> None:
        with self._changed:
            self._serving += 1
            while self._serving in self._abandoned:
                self._abandoned.discard(self._serving)
                self._serving += 1
            self._changed.notify_all()


def _connection_class(turns: WriteTurns, base: type[Any]) -> type[Any]:
    class TurnTaking(base):  # type: ignore[misc]
        """A connection that holds the engine's write turn from BEGIN IMMEDIATE until
        its COMMIT or ROLLBACK has finished."""

        holding = False

        def begin_write(self) -> None:
            if not self.holding:
                turns.take()
                self.holding = True

        def _done(self) -> None:
            if self.holding:
                self.holding = False
                turns.give_back()

        def commit(self) -> None:
            try:
                super().commit()
            finally:
                self._done()

        def rollback(self) -> None:
            try:
                super().rollback()
            finally:
                self._done()

        def close(self) -> None:
            try:
                super().close()
            finally:
                self._done()

    return TurnTaking


def private_folder(path: Path) -> None:
    """Create a folder (and its parents) for the product's data: the folder itself is
    the owner's alone; one that exists is left as it is."""
    if not path.exists():
        path.mkdir(parents=True, exist_ok=True, mode=FOLDER_MODE)
        os.chmod(path, FOLDER_MODE)  # whatever the umask


def private_database(path: Path) -> None:
    """Make the database file (and any `-wal`, `-shm` beside it) readable by its owner
    alone, creating an empty one (a valid empty database) so it never exists otherwise."""
    if not path.exists():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE))
    for companion in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if companion.exists() and companion.stat().st_mode & 0o077:
            os.chmod(companion, FILE_MODE)


def sqlite_engine(path: Path, durability: str, *, vectors: bool = True) -> Engine:
    """An engine on a SQLite file: WAL, full sync on commit unless `durability` is
    "normal", foreign keys on, writes in turns; sqlite-vec loaded where it can be
    (`vectors=False`: never)."""
    private_database(path)
    module, vec = vector_driver() if vectors else (sqlite3, None)
    turns = WriteTurns(error=module.OperationalError)
    engine = sa.create_engine(
        f"sqlite:///{path}",
        module=module,
        connect_args={"timeout": 30, "factory": _connection_class(turns, module.Connection)},
    )

    @sa.event.listens_for(engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        # Take transactions into our own hands so BEGIN IMMEDIATE can be issued:
        # a write then holds the lock from its first statement (no upgrade deadlock).
        dbapi_connection.isolation_level = None
        if vec is not None:
            dbapi_connection.enable_load_extension(True)
            vec.load(dbapi_connection)
            dbapi_connection.enable_load_extension(False)
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={'FULL' if durability == 'full' else 'NORMAL'}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        # Memory-mapped reads keep the path walk off the read() system call. The page
        # cache is each pooled connection's own memory, held for the process's life: at
        # 64 MB a server reading a 100,000-message chat from a few threads kept 130 MB
        # more than at this size; the pages it lets go come from the system's file cache.
        cursor.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KB}")
        cursor.execute("PRAGMA mmap_size=268435456")
        cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        options = conn.get_execution_options()
        if options.get("taverna_read", False):
            conn.exec_driver_sql("BEGIN")
            return
        raw = conn.connection.dbapi_connection
        if raw is not None:
            raw.begin_write()
        if options.get("taverna_relaxed") and durability == "full":
            # Housekeeping (removing a deleted chat's rows) need not wait for the disk:
            # a power cut may undo its last batches, which are then simply done again.
            conn.exec_driver_sql("PRAGMA synchronous=NORMAL")
            conn.connection.info["relaxed"] = True
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    @sa.event.listens_for(engine, "checkin")
    def _checkin(dbapi_connection: Any, record: Any) -> None:
        if record.info.pop("relaxed", False):
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA synchronous=FULL")
            cursor.close()

    return engine
