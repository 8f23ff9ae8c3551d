"""The SQLite store's files: the owner's alone; and its writers, which take turns."""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
from pathlib import Path

import pytest

from taverna.model.chat import NodeRole
from taverna.store import NewChat
from taverna.store.sql import open_store
from taverna.store.sql.sqlite_engine import WriteTurns


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_database_its_companions_and_its_new_folder_are_private(tmp_path: Path) -> None:
    old_umask = os.umask(0o022)  # the usual one, which would give 0644 and 0755
    try:
        store = open_store(tmp_path / "data")
        try:
            chat = store.create_chat(NewChat(title="secret"))
            with store.write(chat.id, revision=chat.revision, label="append") as w:
                w.insert_node(None, NodeRole.USER, "words")
            folder = tmp_path / "data"
            files = [folder / "taverna.db", folder / "taverna.db-wal", folder / "taverna.db-shm"]
            assert all(path.exists() for path in files)
            assert {path.name: _mode(path) for path in files} == {
                path.name: 0o600 for path in files
            }
            assert _mode(folder) == 0o700
        finally:
            store.close()
    finally:
        os.umask(old_umask)


def test_a_database_made_readable_by_others_is_taken_back_on_open(tmp_path: Path) -> None:
    os.chmod(tmp_path, 0o755)
    path = tmp_path / "old.db"
    sqlite3.connect(path).close()
    os.chmod(path, 0o644)
    (tmp_path / "old.db-wal").write_bytes(b"")
    os.chmod(tmp_path / "old.db-wal", 0o664)
    store = open_store(path)
    try:
        assert _mode(path) == 0o600
        assert _mode(tmp_path / "old.db-wal") == 0o600
        assert _mode(tmp_path) == 0o755  # a folder the product did not make is left alone
    finally:
        store.close()


def test_writers_take_turns_in_arrival_order() -> None:
    turns = WriteTurns()
    turns.take()  # the first writer holds the turn
    order: list[str] = []
    waiting = threading.Semaphore(0)

    def writer(name: str) -> None:
        waiting.release()
        turns.take()
        order.append(name)
        turns.give_back()

    threads = []
    for name in ("second", "third", "fourth"):
        thread = threading.Thread(target=writer, args=(name,))
        thread.start()
        waiting.acquire()
        while turns._next <= len(threads) + 1:  # its ticket is drawn: it waits in line
            threading.Event().wait(0.001)
        threads.append(thread)
    turns.give_back()
    for thread in threads:
        thread.join(10)
    assert order == ["second", "third", "fourth"]


def test_a_writer_kept_waiting_too_long_gives_up_and_leaves_the_line_moving() -> None:
    turns = WriteTurns(patience=0.05)
    turns.take()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        turns.take()  # the holder never gives the turn back in time
    turns.give_back()
    turns.take()  # the abandoned ticket is passed over
    turns.give_back()


def test_every_pooled_connection_keeps_a_small_page_cache(tmp_path: Path) -> None:
    """Each connection's page cache is memory it holds for the server's life, one per
    thread that reads: kept small, the system's file cache serves the rest."""
    store = open_store(tmp_path / "data")
    try:
        pooled = [store.engine.raw_connection() for _ in range(2)]
        try:
            sizes = [conn.cursor().execute("PRAGMA cache_size").fetchone()[0] for conn in pooled]
        finally:
            for conn in pooled:
                conn.close()
        # negative: KiB; at most 8 MB each
        assert all(isinstance(size, int) and -8192 <= size < 0 for size in sizes), sizes
    finally:
        store.close()
