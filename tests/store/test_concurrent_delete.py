"""Deleting a chat while another chat stores the same text, on PostgreSQL's concurrent writers.

SQLite runs one write at a time, so the race exists only on PostgreSQL.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from taverna.model.chat import NodeRole
from taverna.store import NewChat
from taverna.store import schema as t
from taverna.store.sql import SqlStore
from taverna.store.testing import DATABASE_URL_ENV, temporary_store

SHARED = "The same words, in two chats."

pytestmark = pytest.mark.skipif(
    not os.environ.get(DATABASE_URL_ENV), reason=f"{DATABASE_URL_ENV} is not set"
)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqlStore]:
    with temporary_store("postgresql", tmp_path) as opened:
        yield opened


def _chat_with(store: SqlStore, text: str) -> str:
    chat = store.create_chat(NewChat(title=text[:10]))
    with store.write(chat.id, revision=chat.revision, label="append") as w:
        node = w.insert_node(None, NodeRole.USER, text)
        w.set_active(node.id)
    return chat.id


def _append(
    store: SqlStore,
    chat_id: str,
    text: str,
    pause: threading.Event | None = None,
    holding: threading.Event | None = None,
) -> None:
    revision = store.get_chat(chat_id).revision
    with store.write(chat_id, revision=revision, label="append") as w:
        parent = w.chat.active_leaf_id
        node = w.insert_node(parent, NodeRole.ASSISTANT, text)
        w.set_active(node.id)
        if holding is not None and pause is not None:
            holding.set()
            assert pause.wait(10)


def _run(target: Any, *args: Any) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def body() -> None:
        try:
            target(*args)
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    thread = threading.Thread(target=body)
    thread.start()
    return thread, errors


def _stored(store: SqlStore) -> set[str]:
    with store.engine.connect() as conn:
        return set(conn.execute(sa.select(t.contents.c.text)).scalars())


def test_delete_passes_over_a_text_an_open_write_is_storing(store: SqlStore) -> None:
    doomed = _chat_with(store, SHARED)
    other = _chat_with(store, "Another chat.")
    holding, pause = threading.Event(), threading.Event()
    writer, write_errors = _run(_append, store, other, SHARED, pause, holding)
    assert holding.wait(10)  # the write has stored its message and not committed yet
    deleter, delete_errors = _run(lambda: store.delete_chat(doomed, revision=2))
    deleter.join(5)
    finished_first = not deleter.is_alive()  # it does not wait for the writer
    pause.set()
    writer.join(10)
    deleter.join(10)
    assert write_errors == [] and delete_errors == []
    assert finished_first
    assert [n.content for n in store.active_path(other).nodes] == ["Another chat.", SHARED]
    assert SHARED in _stored(store)


def test_write_waits_for_a_delete_that_holds_the_text_then_stores_it_again(
    store: SqlStore,
) -> None:
    doomed = _chat_with(store, SHARED)
    other = _chat_with(store, "Another chat.")
    deleting, go_on = threading.Event(), threading.Event()

    def pause_before_removing_texts(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if threading.current_thread().name == "deleter" and statement.startswith(
            "DELETE FROM contents"
        ):
            deleting.set()
            assert go_on.wait(10)

    sa.event.listen(store.engine, "before_cursor_execute", pause_before_removing_texts)
    try:
        errors: list[BaseException] = []

        def delete() -> None:
            try:
                store.delete_chat(doomed, revision=2)
            except BaseException as exc:
                errors.append(exc)

        deleter = threading.Thread(target=delete, name="deleter")
        deleter.start()
        assert deleting.wait(10)  # the delete is about to remove the shared text
        writer, write_errors = _run(_append, store, other, SHARED)
        writer.join(0.5)  # the writer now waits on the delete, or (unsafely) runs ahead
        go_on.set()
        deleter.join(10)
        writer.join(10)
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", pause_before_removing_texts)
    assert errors == [] and write_errors == []
    assert [n.content for n in store.active_path(other).nodes] == ["Another chat.", SHARED]
    assert SHARED in _stored(store)
    assert store.list_chats() and doomed not in {c.chat.id for c in store.list_chats()}
