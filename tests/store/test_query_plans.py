"""The store's hot queries run on indexes, on SQLite and PostgreSQL alike.

Every statement the turn reads, the writes, the listing, the library's version checks,
the token counts and a whole chat deletion send is captured as it runs, then explained
by the database itself (SQLite's `EXPLAIN QUERY PLAN`, PostgreSQL's `EXPLAIN` over
analysed tables with sequential scans turned off, so any scan left is one no index
could serve). None may read a whole table, or a whole index, of the tables that grow
with the chats and the library. And every foreign key is served by an index, so
deleting a referenced row never reads the referencing table.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa

from taverna.model.chat import Branch, Checkpoint, Node, NodeRole, new_id
from taverna.services.chats.service import ChatService
from taverna.store import NewChat
from taverna.store import schema as t
from taverna.store.sql import SqlStore

# Tables that grow with the chats and the library (`chats` has a row a chat).
GROWING = {table.name for table in t.metadata.sorted_tables} - {"chats"}


@contextmanager
def captured(store: SqlStore) -> Iterator[list[tuple[str, Any]]]:
    """Every single statement run on the store meanwhile, with its parameters."""
    seen: list[tuple[str, Any]] = []

    def record(
        conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool
    ) -> None:
        words = statement.lstrip().split(None, 1)
        if not many and words and words[0].upper() in ("SELECT", "WITH", "UPDATE", "DELETE"):
            seen.append((statement, params))

    sa.event.listen(store.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", record)


def _names(statement: str) -> dict[str, str]:
    """Table and alias names of a statement, each to the table it stands for."""
    names: dict[str, str] = {}
    for table, alias in re.findall(
        r"\b(?:FROM|JOIN|UPDATE)\s+(\w+)(?:\s+(?:AS\s+)?(\w+))?", statement, re.IGNORECASE
    ):
        names[table] = table
        if alias:
            names[alias] = table
    return names


def _sqlite_full_scans(conn: Any, statement: str, params: Any) -> list[str]:
    names = _names(statement)
    found = []
    for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params).all():
        detail = str(row[3])
        # A foreign key's check names a table the statement does not; an automatic
        # index is one SQLite builds by reading the whole table.
        match = re.match(r"(?:SCAN|SEARCH) (\w+)", detail)
        whole = detail.startswith("SCAN") or "AUTOMATIC" in detail
        if match and whole and names.get(match[1], match[1]) in GROWING:
            found.append(detail)
    return found


def _postgres_full_scans(conn: Any, statement: str, params: Any) -> list[str]:
    [[plan]] = conn.exec_driver_sql("EXPLAIN (FORMAT JSON) " + statement, params).all()
    found = []

    def walk(node: dict[str, Any], above: str | None) -> None:
        kind = node.get("Node Type", "")
        # A bitmap index scan names no table: its heap scan above it does.
        relation = node.get("Relation Name", above)
        if relation in GROWING:
            if kind == "Seq Scan":
                found.append(f"{kind} on {relation}")
            elif "Index" in kind and "Cond" not in " ".join(node):
                found.append(f"{kind} on {node.get('Index Name')} without a condition")
        for child in node.get("Plans", []):
            walk(child, relation if kind == "Bitmap Heap Scan" else None)

    walk(plan[0]["Plan"], None)
    return found


def _full_scans(store: SqlStore, statements: list[tuple[str, Any]]) -> dict[str, list[str]]:
    bad: dict[str, list[str]] = {}
    with store.engine.connect() as conn:
        postgres = conn.dialect.name == "postgresql"
        if postgres:
            conn.exec_driver_sql("SET enable_seqscan = off")
        for statement, params in statements:
            scans = (
                _postgres_full_scans(conn, statement, params)
                if postgres
                else _sqlite_full_scans(conn, statement, params)
            )
            if scans:
                bad[" ".join(statement.split())[:200]] = scans
    return bad


def _library_and_chats(store: SqlStore, chats: int, length: int) -> list[str]:
    """Chats of `length` messages each (bulk-imported) and a library, then statistics."""
    ids = []
    for number in range(chats):
        nodes: list[Node] = []
        for i in range(length):
            nodes.append(
                Node(
                    id=new_id(),
                    chat_id="",
                    parent_id=nodes[-1].id if nodes else None,
                    role=NodeRole.USER if i % 2 == 0 else NodeRole.ASSISTANT,
                    content=f"chat {number}, message {i}",
                    hidden=i % 17 == 0,
                    deleted=i % 29 == 0,
                )
            )
        # Branches and checkpoints by the dozen, so the planner sees tables worth an index.
        marks = nodes[:: max(length // 40, 1)]
        branches = [Branch(new_id(), "", f"branch {i}", node.id) for i, node in enumerate(marks)]
        checkpoints = [Checkpoint(new_id(), "", f"mark {i}", n.id) for i, n in enumerate(marks)]
        chat = store.import_tree(
            NewChat(title=f"chat {number}"),
            nodes,
            active_leaf_id=nodes[-1].id,
            branches=[Branch(new_id(), "", "main", nodes[-1].id), *branches],
            checkpoints=checkpoints,
        )
        ids.append(chat.id)
    for number in range(200):
        store.put_document("character", f"card {number}", {"name": f"card {number}"})
        store.put_document("lorebook", f"book {number}", {"entries": {}})
    with store.engine.begin() as conn:
        conn.exec_driver_sql("ANALYZE")
    return ids


def test_hot_queries_run_on_indexes(store: SqlStore) -> None:
    chat_ids = _library_and_chats(store, chats=8, length=400)
    chats = ChatService(store)
    chat_id, doomed = chat_ids[0], chat_ids[1]
    with captured(store) as statements:
        chat = chats.get_chat(chat_id)
        leaf = chat.active_leaf_id
        assert leaf is not None
        # a turn: the path's end, what changed, messages by id, counts, versions
        tail = store.path_tail(chat_id, leaf, limit=30)
        store.changed_nodes(chat_id, 1)
        store.get_nodes(chat_id, [n.id for n in tail.nodes[:5]])
        store.user_messages_to(chat_id, leaf)
        store.state_at(chat_id, leaf)
        texts = [n.content for n in tail.nodes]
        store.save_token_counts("o200k", {text: 5 for text in texts})
        store.token_counts("o200k", texts)
        card = store.find_documents("character", name="card 7")[0]
        store.versions_of(
            owner="", kinds=["persona"], ids=[card.id], names={"lorebook": ["book 3"]}
        )
        store.document_versions("lorebook", names=["book 1", "book 2"])
        # the person's writes and what the page reads after them
        sent = chats.append(chat_id, NodeRole.USER, "Hello.", revision=chat.revision)
        reply = chats.add_reply(
            chat_id,
            sent.node.id if sent.node else None,
            "Hi.",
            revision=sent.chat.revision,
            speaker="Ann",
        )
        assert reply.node is not None
        edited = chats.edit(chat_id, reply.node.id, "Hi there.", revision=reply.chat.revision)
        swiped = chats.swipe(chat_id, reply.node.id, "Hello there.", revision=edited.chat.revision)
        undone = chats.undo(chat_id, revision=swiped.chat.revision)
        store.save_sent_prompt(chat_id, reply.node.id, b"record")
        store.sent_prompt(chat_id, reply.node.id)
        store.content_history(chat_id, reply.node.id)
        store.path_before(chat_id, None, limit=50)
        store.path_after(chat_id, tail.nodes[0].id, limit=50)
        store.active_path(chat_id, tail=50)
        store.branches(chat_id)
        store.children(chat_id, tail.nodes[-2].id)
        store.revisions(chat_id, limit=20)
        chats.rename_chat(chat_id, "renamed", revision=undone.chat.revision)
        # the chat list, and a whole chat deleted (its lookups and the texts it shared)
        store.list_chats()
        store.purge_batch = 200
        store.delete_chat(doomed, revision=store.get_chat(doomed).revision)
        store.purge_deleted()
    assert store.deleted_chats() == []
    assert len(statements) > 60
    assert _full_scans(store, statements) == {}


def test_every_foreign_key_is_served_by_an_index(store: SqlStore) -> None:
    """Deleting a row a foreign key points at looks for rows that still point at it: on
    an index, not by reading the referencing table (which made chat deletes take minutes)."""
    inspector = sa.inspect(store.engine)
    unserved = []
    for table in inspector.get_table_names():
        if table == "alembic_version":
            continue
        leading = [inspector.get_pk_constraint(table)["constrained_columns"]]
        # A partial index holds some rows only: it serves no foreign key.
        leading += [
            index["column_names"]
            for index in inspector.get_indexes(table)
            if not any(k.endswith("_where") for k in index.get("dialect_options", {}))
        ]
        for key in inspector.get_foreign_keys(table):
            columns = key["constrained_columns"]
            if not any(found[: len(columns)] == columns for found in leading):
                unserved.append(f"{table}({', '.join(columns)}) -> {key['referred_table']}")
    assert unserved == []
    assert set(inspector.get_table_names()) >= {table.name for table in t.metadata.sorted_tables}
