"""A span of reads (`Store.reading`): its reads share one pooled connection, on its own
thread only; the chat's row is read once; outside it every read takes its own connection
(SQLite and, when configured, PostgreSQL)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa

from taverna.errors import NotFound
from taverna.model.chat import NodeRole
from taverna.store import NewChat
from taverna.store.sql import SqlStore


@contextmanager
def counted(store: SqlStore) -> Iterator[dict[str, int]]:
    """Connection checkouts and chat-row reads while the block runs, on any thread."""
    seen = {"checkouts": 0, "chat_rows": 0}

    def checkout(*_: Any) -> None:
        seen["checkouts"] += 1

    def statement(_conn: Any, _cursor: Any, text: str, *_: Any) -> None:
        if text.lstrip().startswith("SELECT chats.id"):
            seen["chat_rows"] += 1

    sa.event.listen(store.engine.pool, "checkout", checkout)
    sa.event.listen(store.engine, "before_cursor_execute", statement)
    try:
        yield seen
    finally:
        sa.event.remove(store.engine.pool, "checkout", checkout)
        sa.event.remove(store.engine, "before_cursor_execute", statement)


def _chat(store: SqlStore) -> str:
    chat = store.create_chat(NewChat(title="span"))
    with store.write(chat.id, revision=chat.revision, label="append") as w:
        node = w.insert_node(None, NodeRole.USER, "hello")
        w.set_selection(None, node.id)
        w.set_active(node.id)
    return chat.id


def _reads(store: SqlStore, chat_id: str) -> None:
    chat = store.get_chat(chat_id)
    assert chat.active_leaf_id is not None
    store.path_tail(chat_id, chat.active_leaf_id, limit=5)
    store.get_chat(chat_id)
    store.versions_of(owner="", kinds=("settings",))


def test_reads_in_a_span_share_one_connection_and_one_chat_row(store: SqlStore) -> None:
    chat_id = _chat(store)
    with counted(store) as apart:
        _reads(store, chat_id)
    assert apart["checkouts"] >= 3
    with counted(store) as together, store.reading():
        _reads(store, chat_id)
    assert together["checkouts"] == 1
    # the chat's row: read by get_chat, the path's tail and get_chat again, once
    assert together["chat_rows"] == 1 < apart["chat_rows"]


def test_a_span_still_refuses_a_chat_that_is_gone(store: SqlStore) -> None:
    chat_id = _chat(store)
    with store.reading():
        store.get_chat(chat_id)
    store.delete_chat(chat_id, revision=store.get_chat(chat_id).revision)
    with store.reading():
        try:
            store.get_chat(chat_id)
        except NotFound:
            pass
        else:
            raise AssertionError("a deleted chat was read inside a span")


def test_another_thread_inside_a_span_reads_on_its_own_connection(store: SqlStore) -> None:
    chat_id = _chat(store)
    seen: list[str] = []
    with store.reading(), counted(store) as counts:
        store.get_chat(chat_id)

        def elsewhere() -> None:
            seen.append(store.get_chat(chat_id).id)

        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join()
    assert seen == [chat_id]
    assert counts["checkouts"] == 1  # the other thread's; the span's was taken before


def test_after_a_span_reads_take_their_own_connections_again(store: SqlStore) -> None:
    chat_id = _chat(store)
    with store.reading():
        store.get_chat(chat_id)
    with counted(store) as after:
        store.get_chat(chat_id)
        store.get_chat(chat_id)
    assert after["checkouts"] == 2 and after["chat_rows"] == 2
