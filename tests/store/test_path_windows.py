"""Pages of the active path read from a cursor: the same messages and places as the whole
path, at the cost of the page (SQLite and, when configured, PostgreSQL)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from taverna.errors import NotFound
from taverna.model.chat import Node, NodeRole, PathEntry, new_id
from taverna.services.chats.service import ChatService
from taverna.store import NewChat
from taverna.store.sql import SqlStore
from taverna.store.sql.paths import _DESCENT_SQL


def _reading(entries: tuple[PathEntry, ...]) -> list[tuple[Any, ...]]:
    return [(e.node.id, e.position, e.candidate_index, e.candidate_count) for e in entries]


def _chat_with_tombstones(store: SqlStore) -> tuple[str, list[str]]:
    """Twelve messages, a second greeting, two deleted in the middle."""
    chats = ChatService(store)
    out = chats.create_chat("windows", greetings=["g0", "g1"])
    chat_id, revision = out.chat.id, out.chat.revision
    assert out.node is not None
    ids = [out.node.id]
    for i in range(1, 12):
        role = NodeRole.USER if i % 2 else NodeRole.ASSISTANT
        added = chats.append(chat_id, role, f"m{i}", revision=revision)
        assert added.node is not None
        ids.append(added.node.id)
        revision = added.chat.revision
    revision = chats.delete(chat_id, ids[3], revision=revision).chat.revision
    chats.delete(chat_id, ids[7], revision=revision)
    return chat_id, ids


def test_pages_match_the_whole_path_from_every_cursor(store: SqlStore) -> None:
    chat_id, ids = _chat_with_tombstones(store)
    whole = store.active_path(chat_id).entries
    assert len(whole) == 10 and whole[0].candidate_count == 2
    for limit in (1, 3, 100):
        last = store.path_before(chat_id, None, limit=limit)
        assert _reading(last.entries) == _reading(whole[-limit:])
        assert (last.total, last.start, last.has_newer) == (10, max(0, 10 - limit), False)
        assert last.has_older == (limit < 10)
        first = store.path_after(chat_id, None, limit=limit)
        assert _reading(first.entries) == _reading(whole[:limit])
        assert (first.start, first.has_older) == (0, False)
        for k, entry in enumerate(whole):
            older = store.path_before(chat_id, entry.node.id, limit=limit)
            assert _reading(older.entries) == _reading(whole[max(0, k - limit) : k])
            assert older.start == max(0, k - limit) and older.total == 10
            newer = store.path_after(chat_id, entry.node.id, limit=limit)
            assert _reading(newer.entries) == _reading(whole[k + 1 : k + 1 + limit])
            assert newer.start == k + 1
            assert newer.has_newer == (k + 1 + limit < 10)
        for k in range(12):
            at = store.path_at(chat_id, k, limit=limit)
            begin = max(0, min(k, 10 - limit))
            assert _reading(at.entries) == _reading(whole[begin : begin + limit])
            assert (at.start, at.total) == (begin, 10)
    # A deleted message as a cursor: pages around its place.
    assert [e.position for e in store.path_before(chat_id, ids[3], limit=2).entries] == [1, 2]
    assert [e.position for e in store.path_after(chat_id, ids[3], limit=2).entries] == [3, 4]


def test_empty_chat_and_unknown_cursor(store: SqlStore) -> None:
    chat = store.create_chat(NewChat(title="empty"))
    for window in (
        store.path_before(chat.id, None, limit=5),
        store.path_after(chat.id, None, limit=5),
    ):
        assert (window.entries, window.start, window.total) == ((), 0, 0)
        assert not window.has_older and not window.has_newer
    empty = store.path_at(chat.id, 3, limit=5)
    assert (empty.entries, empty.start, empty.total) == ((), 0, 0)
    for read in (store.path_before, store.path_after):
        try:
            read(chat.id, "nope", limit=5)
        except NotFound:
            continue
        raise AssertionError("an unknown cursor must be NotFound")


def test_the_walk_after_a_message_stops_at_the_active_leaf(store: SqlStore) -> None:
    # The remembered choices continue below a checkpoint the path went back to.
    chats = ChatService(store)
    out = chats.create_chat("back", greetings=["hi"])
    chat_id, revision = out.chat.id, out.chat.revision
    assert out.node is not None
    ids = [out.node.id]
    for i in range(4):
        added = chats.append(chat_id, NodeRole.USER, f"m{i}", revision=revision)
        assert added.node is not None
        ids.append(added.node.id)
        revision = added.chat.revision
    made, checkpoint = chats.create_checkpoint(chat_id, ids[2], "cp", revision=revision)
    chats.open_checkpoint(chat_id, checkpoint.id, revision=made.chat.revision)
    after = store.path_after(chat_id, ids[0], limit=10)
    assert [e.node.id for e in after.entries] == ids[1:3]
    assert (after.total, after.has_newer) == (3, False)
    assert store.path_after(chat_id, ids[2], limit=10).entries == ()


def test_a_page_of_a_long_chat_reads_only_the_page(store: SqlStore) -> None:
    nodes: list[Node] = []
    parent: str | None = None
    for i in range(3000):
        node = Node(new_id(), "", parent, NodeRole.USER if i % 2 else NodeRole.ASSISTANT, f"m{i}")
        nodes.append(node)
        parent = node.id
    chat = store.import_tree(NewChat(title="long"), nodes, active_leaf_id=parent)
    walked: list[int] = []

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "WITH RECURSIVE" in statement:
            walked.append(0)

    sa.event.listen(store.engine, "before_cursor_execute", count)
    try:
        last = store.path_before(chat.id, None, limit=20)
        older = store.path_before(chat.id, nodes[1500].id, limit=20)
        newer = store.path_after(chat.id, nodes[10].id, limit=20)
        middle = store.path_at(chat.id, 1234, limit=20)
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", count)
    assert [e.position for e in last.entries] == list(range(2980, 3000))
    assert [e.position for e in older.entries] == list(range(1480, 1500))
    assert [e.position for e in newer.entries] == list(range(11, 31))
    assert [e.position for e in middle.entries] == list(range(1234, 1254))
    assert [e.node.id for e in middle.entries] == [n.id for n in nodes[1234:1254]]
    assert last.total == older.total == newer.total == middle.total == 3000
    # one bounded walk each (the position's: a climb over ids, then the page); no
    # tombstones, so no counting climb
    assert len(walked) == 5


def test_each_step_down_the_path_looks_up_one_selection(store: SqlStore) -> None:
    """The walk after a message finds each next message by its parent's selection (the
    primary key's both columns), never by reading the chat's every selection per step
    (which made a page of a 20,000-message chat from its start take seconds)."""
    if store.engine.dialect.name != "sqlite":
        return
    nodes: list[Node] = []
    parent: str | None = None
    for i in range(200):
        node = Node(new_id(), "", parent, NodeRole.USER, f"m{i}")
        nodes.append(node)
        parent = node.id
    chat = store.import_tree(NewChat(title="steps"), nodes, active_leaf_id=parent)
    params = {"start": nodes[0].id, "leaf": parent, "chat": chat.id, "no": False, "limit": 50}
    with store.engine.connect() as conn:
        plan = [
            str(row[3])
            for row in conn.execute(sa.text("EXPLAIN QUERY PLAN " + _DESCENT_SQL), params)
        ]
    lookups = [step for step in plan if "selections" in step or step.startswith("SEARCH s ")]
    assert lookups and all("parent_id=?" in step for step in lookups), plan
