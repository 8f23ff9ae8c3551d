"""Deleting a chat: hidden at once, its rows removed in short transactions (in the
background for a long chat), resumed after a crash, shared texts kept (SQLite and,
when configured, PostgreSQL)."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from taverna.errors import NotFound
from taverna.model.chat import Branch, Checkpoint, Node, NodeRole, new_id
from taverna.store import NewChat, StaleRevision
from taverna.store import schema as t
from taverna.store.sql import SqlStore, open_store
from taverna.store.testing import DATABASE_URL_ENV, backends

# The tables holding a chat's rows, besides `chats` itself.
CHAT_TABLES = (
    t.nodes,
    t.selections,
    t.branches,
    t.checkpoints,
    t.revisions,
    t.changes,
    t.history_texts,
    t.sent_prompts,
)


def _append(store: SqlStore, chat_id: str, text: str) -> Node:
    chat = store.get_chat(chat_id)
    with store.write(chat_id, revision=chat.revision, label="append") as w:
        parent = w.chat.active_leaf_id
        node = w.insert_node(parent, NodeRole.USER, text)
        w.set_selection(parent, node.id)
        w.set_active(node.id)
    return node


def _edit(store: SqlStore, chat_id: str, node_id: str, text: str) -> None:
    chat = store.get_chat(chat_id)
    with store.write(chat_id, revision=chat.revision, label="edit") as w:
        w.update_node(node_id, content=text)


def _long_chat(store: SqlStore, title: str, count: int, shared: str) -> str:
    """A chat of `count` messages with its own texts, one text another chat also has, an
    edit (history), an undone message, a checkpoint, a branch and a prompt record."""
    chat = store.create_chat(NewChat(title=title))
    nodes = [_append(store, chat.id, shared if i == 3 else f"{title} {i}") for i in range(count)]
    _edit(store, chat.id, nodes[1].id, f"{title} 1, edited")
    _append(store, chat.id, f"{title}, then undone")
    revision = store.get_chat(chat.id).revision
    with store.write(chat.id, revision=revision, label="undo") as w:
        w.undo()
    with store.write(chat.id, revision=revision + 1, label="marks") as w:
        w.put_branch(Branch(new_id(), chat.id, "side", nodes[2].id))
        w.put_checkpoint(Checkpoint(new_id(), chat.id, "here", nodes[2].id))
    store.save_sent_prompt(chat.id, nodes[-1].id, b"record")
    store.save_token_counts("o200k", {f"{title} 2": 3, shared: 2})
    return chat.id


def _rows(store: SqlStore, chat_id: str) -> int:
    """Every row the chat has, its own included."""
    with store.engine.connect() as conn:
        count = conn.execute(
            sa.select(sa.func.count()).select_from(t.chats).where(t.chats.c.id == chat_id)
        ).scalar()
        for table in CHAT_TABLES:
            count += conn.execute(
                sa.select(sa.func.count()).select_from(table).where(table.c.chat_id == chat_id)
            ).scalar()
        return int(count or 0)


def _texts(store: SqlStore) -> set[str]:
    with store.engine.connect() as conn:
        return set(conn.execute(sa.select(t.contents.c.text)).scalars())


def _needed_texts(store: SqlStore) -> set[str]:
    """The texts some message or some chat's history still names."""
    with store.engine.connect() as conn:
        used = set(conn.execute(sa.select(t.nodes.c.content_hash)).scalars())
        used |= set(conn.execute(sa.select(t.history_texts.c.hash)).scalars())
        return set(
            conn.execute(sa.select(t.contents.c.text).where(t.contents.c.hash.in_(used))).scalars()
        )


def _wait_until_purged(store: SqlStore, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while store.deleted_chats():
        assert time.monotonic() < deadline, "the background purge did not finish"
        time.sleep(0.05)


def test_a_deleted_chat_is_gone_at_once_and_its_rows_follow(store: SqlStore) -> None:
    store.purge_batch = 10  # many small transactions: the background takes over
    shared = "A text both chats have."
    doomed = _long_chat(store, "doomed", 30, shared)
    kept = _long_chat(store, "kept", 4, shared)
    assert _rows(store, doomed) > 100
    store.delete_chat(doomed, revision=store.get_chat(doomed).revision)
    assert [c.chat.id for c in store.list_chats()] == [kept]
    with pytest.raises(NotFound):
        store.get_chat(doomed)
    with pytest.raises(NotFound):
        store.active_path(doomed)
    with pytest.raises(NotFound), store.write(doomed, revision=1, label="late") as w:
        w.insert_node(None, NodeRole.USER, "too late")
    with pytest.raises(NotFound):
        store.delete_chat(doomed, revision=1)
    _wait_until_purged(store)
    assert _rows(store, doomed) == 0
    texts = _texts(store)
    assert not any(text.startswith("doomed") for text in texts)
    assert shared in texts and texts == _needed_texts(store)
    assert store.token_counts("o200k", [shared, "doomed 2"]) == {shared: 2}
    assert [n.content for n in store.active_path(kept).nodes][3] == shared


def test_a_small_chat_is_removed_whole_before_the_delete_returns(store: SqlStore) -> None:
    chat_id = _long_chat(store, "small", 3, "shared")
    store.delete_chat(chat_id, revision=store.get_chat(chat_id).revision)
    assert store.deleted_chats() == []
    assert _rows(store, chat_id) == 0 and _texts(store) == set()


def test_each_purge_transaction_removes_at_most_a_batch(store: SqlStore) -> None:
    store.purge_batch = 25
    chat_id = _long_chat(store, "long", 40, "shared")
    total = _rows(store, chat_id)
    # The background's share is done by hand here, one transaction at a time.
    store.purge_in_background = lambda: None  # type: ignore[method-assign]
    store.delete_chat(chat_id, revision=store.get_chat(chat_id).revision)
    removed = [total - _rows(store, chat_id)]  # the delete's own first batch
    while store.deleted_chats():
        before = _rows(store, chat_id)
        store.purge_step(chat_id)
        removed.append(before - _rows(store, chat_id))
    assert sum(removed) == total and total > 200
    assert max(removed) <= 25 + 1  # a batch, and the chat's own row with the last one
    assert len(removed) >= total // 26
    assert _texts(store) == set()


def test_a_revision_too_large_for_the_database_is_a_stale_one(store: SqlStore) -> None:
    chat = store.create_chat(NewChat(title="t"))
    # 2**31 - 1 fits the column but its successor does not: as stale as the others
    for huge in (2**31 - 1, 2**31, 10**30, -1):
        with pytest.raises(StaleRevision) as raised, store.write(chat.id, revision=huge, label="x"):
            pass
        assert raised.value.current_revision == chat.revision
        with pytest.raises(StaleRevision):
            store.delete_chat(chat.id, revision=huge)
    assert store.get_chat(chat.id).revision == chat.revision


@contextmanager
def _reopenable(backend: str, folder: Path) -> Iterator[tuple[SqlStore, Any]]:
    """A store, and a function that opens the same database again."""
    if backend == "sqlite":

        def again() -> SqlStore:
            return open_store(folder / "data")

        store = again()
        try:
            yield store, again
        finally:
            store.close()
        return
    url = os.environ[DATABASE_URL_ENV]
    schema = f"t_{uuid.uuid4().hex[:16]}"

    def again_pg() -> SqlStore:
        return open_store(url, schema=schema)

    store = again_pg()
    try:
        yield store, again_pg
    finally:
        store.close()
        engine = sa.create_engine(url)
        with engine.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        engine.dispose()


@pytest.mark.parametrize("backend", backends())
def test_a_purge_cut_short_leaves_a_consistent_store_and_resumes_on_the_next_open(
    backend: str, tmp_path: Path
) -> None:
    with _reopenable(backend, tmp_path) as (store, reopen):
        store.purge_batch = 10
        shared = "Kept for the other chat."
        doomed = _long_chat(store, "doomed", 30, shared)
        kept = _long_chat(store, "kept", 4, shared)
        batches = 0

        def crash_on_third_batch(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            nonlocal batches
            if statement.startswith("DELETE FROM nodes "):
                batches += 1
                if batches >= 3:
                    raise RuntimeError("power cut")

        sa.event.listen(store.engine, "before_cursor_execute", crash_on_third_batch)
        store.delete_chat(doomed, revision=store.get_chat(doomed).revision)
        deadline = time.monotonic() + 30
        while batches < 3:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        store.close()  # the background purge stops; the failed batch was rolled back
        sa.event.remove(store.engine, "before_cursor_execute", crash_on_third_batch)

        again = reopen()
        try:
            # Cut short: still hidden, partly there, and every text a row needs is there
            # while none that only removed rows needed is left behind.
            assert again.deleted_chats() == [doomed]
            assert [c.chat.id for c in again.list_chats()] == [kept]
            assert _rows(again, doomed) > 0
            assert _texts(again) == _needed_texts(again)
            again.purge_in_background()  # what a start does
            _wait_until_purged(again)
            assert _rows(again, doomed) == 0
            assert _texts(again) == _needed_texts(again)
            assert shared in _texts(again)
            assert not any(text.startswith("doomed") for text in _texts(again))
        finally:
            again.close()
