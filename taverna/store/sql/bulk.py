"""Bulk import: a whole tree written as a new chat, straight through the driver."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from taverna.errors import TavernaError
from taverna.model.chat import Branch, Chat, Checkpoint, Node, NodeRole, new_id
from taverna.store import schema as t
from taverna.store.repository import NewChat
from taverna.store.sql.base import SqlBase
from taverna.store.sql.chats import _insert_chat, _new_chat_row
from taverna.store.sql.contents import content_hash
from taverna.store.sql.rows import _chat_from_row, _utc
from taverna.store.sql.search import index_texts


class SqlBulkImport(SqlBase):
    """A whole tree imported as a new chat in one transaction."""

    def import_tree(
        self,
        new: NewChat,
        nodes: Sequence[Node],
        *,
        active_leaf_id: str | None,
        branches: Sequence[Branch] = (),
        checkpoints: Sequence[Checkpoint] = (),
        selections: Mapping[str, str] | None = None,
    ) -> Chat:
        now = _utc(self.clock())
        chat_row = _new_chat_row(new, now)
        chat_id = chat_row["id"]
        node_rows, texts = _node_rows(chat_id, nodes, now)
        known = {row["id"] for row in node_rows}
        _check_references(known, active_leaf_id, branches, checkpoints, selections)
        if selections is None:
            chosen = _chosen_children(node_rows, active_leaf_id)
        else:
            chosen = dict(selections)
        branch_rows = [
            _pointer_row(chat_id, b.id, b.name, "head_id", b.head_id, b.created or now)
            for b in branches
        ] or [_pointer_row(chat_id, new_id(), "main", "head_id", active_leaf_id, now)]
        chat_row["active_branch_id"] = branch_rows[0]["id"]
        chat_row["active_leaf_id"] = active_leaf_id
        with self.engine.begin() as conn:
            _insert_chat(conn, chat_row, "import", now)
            _insert_missing_contents(conn, texts)
            _bulk_insert(conn, t.nodes, node_rows)
            _bulk_insert(
                conn,
                t.selections,
                [{"chat_id": chat_id, "parent_id": p, "child_id": c} for p, c in chosen.items()],
            )
            conn.execute(t.branches.insert(), branch_rows)
            if checkpoints:
                conn.execute(
                    t.checkpoints.insert(),
                    [
                        _pointer_row(chat_id, c.id, c.name, "node_id", c.node_id, c.created or now)
                        for c in checkpoints
                    ],
                )
        return _chat_from_row(chat_row)


def _node_rows(
    chat_id: str, nodes: Sequence[Node], now: datetime
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The rows of `nodes` (parents first) with their depth and the node whose state
    applies, and their texts by hash; a node before its parent, or twice, is refused."""
    info: dict[str, tuple[int, str | None]] = {}
    node_rows: list[dict[str, Any]] = []
    texts: dict[str, str] = {}
    for node in nodes:
        parent = node.parent_id or ""
        if parent and parent not in info:
            raise TavernaError(
                f"message {node.id} comes before its parent {parent}",
                field="nodes",
                code="message_comes_before_its_parent",
                params={"id": str(node.id), "parent": str(parent)},
            )
        if node.id in info:
            raise TavernaError(
                f"message id {node.id} appears twice",
                field="nodes",
                code="message_id_appears_twice",
                params={"id": str(node.id)},
            )
        depth, inherited = info[parent] if parent else (-1, None)
        state_from = node.id if node.state is not None else inherited
        info[node.id] = (depth + 1, state_from)
        key = content_hash(node.content)
        texts[key] = node.content
        node_rows.append(
            {
                "id": node.id,
                "chat_id": chat_id,
                "parent_id": parent,
                "role": NodeRole(node.role).value,
                "speaker": node.speaker,
                "content_hash": key,
                "hidden": node.hidden,
                "deleted": node.deleted,
                "created": _utc(node.created or now),
                "depth": depth + 1,
                "generation": node.generation.to_json() if node.generation else None,
                "extras": dict(node.extras),
                "state": node.state.to_json() if node.state is not None else None,
                "state_from": state_from,
                "revision": 1,
            }
        )
    return node_rows, texts


def _check_references(
    known: Collection[str],
    active_leaf_id: str | None,
    branches: Sequence[Branch],
    checkpoints: Sequence[Checkpoint],
    selections: Mapping[str, str] | None,
) -> None:
    """Refuse an active leaf, branch, checkpoint or selection naming no imported message."""
    if active_leaf_id is not None and active_leaf_id not in known:
        raise TavernaError(
            "the active leaf is not among the messages",
            field="active_leaf_id",
            code="active_leaf_is_not_among",
        )
    for branch in branches:
        if branch.head_id is not None and branch.head_id not in known:
            raise TavernaError(
                f"branch {branch.name!r} points at no message of the chat",
                field="branches",
                code="branch_points_at_no_message",
                params={"name": str(branch.name)},
            )
    for checkpoint in checkpoints:
        if checkpoint.node_id not in known:
            raise TavernaError(
                f"checkpoint {checkpoint.name!r} points at no message of the chat",
                field="checkpoints",
                code="checkpoint_points_at_no_message",
                params={"name": str(checkpoint.name)},
            )
    for parent_key, child in (selections or {}).items():
        if child not in known or (parent_key and parent_key not in known):
            raise TavernaError(
                "a selection names no message of the chat",
                field="selections",
                code="selection_has_no_message",
            )


def _chosen_children(
    node_rows: Sequence[Mapping[str, Any]], active_leaf_id: str | None
) -> dict[str, str]:
    """Each parent's chosen child (`""` for the roots): its newest, or the one on the
    active path."""
    chosen: dict[str, str] = {}
    for row in node_rows:  # newest child wins, then the active path overrides
        chosen[row["parent_id"]] = row["id"]
    by_id = {row["id"]: row for row in node_rows}
    current = active_leaf_id
    while current:
        parent = by_id[current]["parent_id"]
        chosen[parent] = current
        current = parent or None
    return chosen


def _pointer_row(
    chat_id: str, id: str, name: str, column: str, target: str | None, created: datetime
) -> dict[str, Any]:
    """The row of a branch (`column` "head_id") or a checkpoint (`column` "node_id")."""
    return {
        "id": id,
        "chat_id": chat_id,
        "name": name,
        column: target,
        "created": _utc(created),
    }


def _bulk_insert(conn: Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert many rows straight through the driver's executemany.

    SQLAlchemy's per-value processing costs more than SQLite's own work for the
    hundreds of thousands of rows of a large import, so values are converted here,
    in the same stored form SQLAlchemy uses (JSON text, naive UTC timestamps on
    SQLite; JSONB and aware timestamps on PostgreSQL).
    """
    if not rows:
        return
    names = list(rows[0])
    columns = [table.c[name] for name in names]
    sqlite = conn.dialect.name == "sqlite"
    if sqlite:
        dump_json: Callable[[Any], Any] = json.dumps
    else:
        from psycopg.types.json import Jsonb

        dump_json = Jsonb

    def converter(column: sa.Column[Any]) -> Callable[[Any], Any] | None:
        if isinstance(column.type, sa.JSON):
            return lambda v: None if v is None else dump_json(v)
        if isinstance(column.type, sa.DateTime) and sqlite:
            return lambda v: _utc(v).replace(tzinfo=None).isoformat(" ", "microseconds")
        return None

    converters = [converter(c) for c in columns]
    marker = "?" if conn.dialect.paramstyle == "qmark" else "%s"
    quote = conn.dialect.identifier_preparer.quote
    sql = (
        f"INSERT INTO {quote(table.name)} ({', '.join(quote(n) for n in names)}) "
        f"VALUES ({', '.join([marker] * len(names))})"
    )
    pairs = list(zip(names, converters, strict=True))
    values = [
        tuple(row[name] if conv is None else conv(row[name]) for name, conv in pairs)
        for row in rows
    ]
    if not sqlite:
        # PostgreSQL: COPY streams the rows in one command, on the same transaction.
        raw = conn.connection.driver_connection
        assert raw is not None
        copy_sql = f"COPY {quote(table.name)} ({', '.join(quote(n) for n in names)}) FROM STDIN"
        with raw.cursor() as cursor, cursor.copy(copy_sql) as copy:
            for value in values:
                copy.write_row(value)
        return
    for start in range(0, len(values), 10000):
        conn.exec_driver_sql(sql, values[start : start + 10000])


def _insert_missing_contents(conn: Connection, texts: Mapping[str, str]) -> None:
    keys = list(texts)
    present: set[str] = set()
    sqlite = conn.dialect.name == "sqlite"
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        query = sa.select(t.contents.c.hash).where(t.contents.c.hash.in_(chunk))
        if not sqlite:
            # Held until commit, so a chat being deleted cannot take these texts away.
            query = query.with_for_update(key_share=True)
        present.update(conn.execute(query).scalars())
    added = {k: texts[k] for k in keys if k not in present}
    _bulk_insert(conn, t.contents, [{"hash": k, "text": text} for k, text in added.items()])
    index_texts(conn, added)
