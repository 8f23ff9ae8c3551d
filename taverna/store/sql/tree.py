"""A chat's tree: its messages, the state in force at one, its branches and checkpoints."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from taverna.errors import NotFound
from taverna.model.chat import Branch, BranchSummary, ChatState, ChatTree, Checkpoint, Node
from taverna.store import schema as t
from taverna.store.sql.base import SqlBase
from taverna.store.sql.positions import _climb_marks
from taverna.store.sql.rows import (
    _RAW_NODE_SQL,
    _aware,
    _chat_from_row,
    _node_from_raw,
    _node_from_row,
    _node_select,
)


def _children(
    conn: Connection, chat_id: str, parent_id: str | None, include_deleted: bool
) -> list[Node]:
    query = _node_select().where(
        t.nodes.c.chat_id == chat_id, t.nodes.c.parent_id == (parent_id or "")
    )
    if not include_deleted:
        query = query.where(t.nodes.c.deleted == sa.false())
    rows = conn.execute(query.order_by(t.nodes.c.id)).mappings()
    return [_node_from_row(r, r["text"]) for r in rows]


_PATH_SQL = """
WITH RECURSIVE path(id, parent_id) AS (
    SELECT id, parent_id FROM nodes WHERE id = :leaf AND chat_id = :chat
    UNION ALL
    SELECT n.id, n.parent_id FROM nodes n JOIN path p ON n.id = p.parent_id
)
"""


def _path_to(conn: Connection, chat_id: str, node_id: str) -> list[Node]:
    sql = sa.text(
        _PATH_SQL
        + f"""
        SELECT {_RAW_NODE_SQL}, c.text FROM path p
        JOIN nodes n ON n.id = p.id
        JOIN contents c ON c.hash = n.content_hash
        ORDER BY n.depth
        """
    )
    rows = conn.execute(sql, {"leaf": node_id, "chat": chat_id}).all()
    if not rows:
        raise NotFound(
            f"no message {node_id} in this chat",
            field="node_id",
            code="no_message_in_this_chat",
            params={"node_id": str(node_id)},
        )
    return [_node_from_raw(r, r[13]) for r in rows]


def _state_at(
    conn: Connection, chat_id: str, node_id: str | None, base: Mapping[Any, Any] | None
) -> ChatState:
    if node_id is None:
        return ChatState.from_json(base or {})
    source = conn.execute(
        sa.select(t.nodes.c.state_from).where(t.nodes.c.id == node_id, t.nodes.c.chat_id == chat_id)
    ).first()
    if source is None:
        raise NotFound(
            f"no message {node_id} in this chat",
            field="node_id",
            code="no_message_in_this_chat",
            params={"node_id": str(node_id)},
        )
    if source[0] is None:
        return ChatState.from_json(base or {})
    state = conn.execute(sa.select(t.nodes.c.state).where(t.nodes.c.id == source[0])).scalar()
    return ChatState.from_json(state or {})


def _branches(conn: Connection, chat_id: str) -> list[Branch]:
    rows = conn.execute(
        sa.select(t.branches)
        .where(t.branches.c.chat_id == chat_id)
        .order_by(t.branches.c.created, t.branches.c.id)
    ).mappings()
    return [
        Branch(r["id"], r["chat_id"], r["name"], r["head_id"], _aware(r["created"])) for r in rows
    ]


def _checkpoints(conn: Connection, chat_id: str) -> list[Checkpoint]:
    rows = conn.execute(
        sa.select(t.checkpoints)
        .where(t.checkpoints.c.chat_id == chat_id)
        .order_by(t.checkpoints.c.created, t.checkpoints.c.id)
    ).mappings()
    return [
        Checkpoint(r["id"], r["chat_id"], r["name"], r["node_id"], _aware(r["created"]))
        for r in rows
    ]


class SqlTree(SqlBase):
    """Reads of a chat's tree: messages, children, the path to one, branches, checkpoints."""

    def get_node(self, chat_id: str, node_id: str) -> Node:
        with self._read() as conn:
            row = (
                conn.execute(
                    _node_select().where(t.nodes.c.id == node_id, t.nodes.c.chat_id == chat_id)
                )
                .mappings()
                .first()
            )
        if row is None:
            raise NotFound(
                f"no message {node_id} in this chat",
                field="node_id",
                code="no_message_in_this_chat",
                params={"node_id": str(node_id)},
            )
        return _node_from_row(row, row["text"])

    def children(self, chat_id: str, parent_id: str | None) -> list[Node]:
        with self._read() as conn:
            return _children(conn, chat_id, parent_id, False)

    def path_to(self, chat_id: str, node_id: str) -> list[Node]:
        with self._read() as conn:
            return _path_to(conn, chat_id, node_id)

    def state_at(self, chat_id: str, node_id: str | None) -> ChatState:
        with self._read() as conn:
            row = self._chat_row(conn, chat_id)
            return _state_at(conn, chat_id, node_id, row["base_state"])

    def tree(self, chat_id: str) -> ChatTree:
        with self._read() as conn:
            chat = _chat_from_row(self._chat_row(conn, chat_id))
            rows = conn.execute(
                sa.text(
                    f"SELECT {_RAW_NODE_SQL}, c.text FROM nodes n"
                    " JOIN contents c ON c.hash = n.content_hash"
                    " WHERE n.chat_id = :chat ORDER BY n.depth, n.id"
                ),
                {"chat": chat_id},
            ).all()
            nodes = tuple(_node_from_raw(r, r[13]) for r in rows)
            chosen = conn.execute(
                sa.select(t.selections.c.parent_id, t.selections.c.child_id).where(
                    t.selections.c.chat_id == chat_id
                )
            )
            selections = {p: c for p, c in chosen}
            return ChatTree(
                chat=chat,
                nodes=nodes,
                branches=tuple(_branches(conn, chat_id)),
                checkpoints=tuple(_checkpoints(conn, chat_id)),
                selections=selections,
            )

    def branches(self, chat_id: str) -> list[BranchSummary]:
        with self._read() as conn:
            chat = _chat_from_row(self._chat_row(conn, chat_id))
            branches = _branches(conn, chat_id)
            heads = {b.head_id for b in branches if b.head_id is not None}
            rows = {
                row["id"]: row
                for row in conn.execute(_node_select().where(t.nodes.c.id.in_(heads))).mappings()
            }
            # The shallowest tombstone (partial index): nothing above it needs a look, so a
            # chat without deleted messages lists every branch from its head row alone.
            shallowest = conn.execute(
                sa.select(sa.func.min(t.nodes.c.depth)).where(
                    t.nodes.c.chat_id == chat_id, t.nodes.c.deleted == sa.true()
                )
            ).scalar()
            result = []
            for branch in branches:
                active = branch.id == chat.active_branch_id
                row = rows.get(branch.head_id) if branch.head_id else None
                if row is None:
                    result.append(BranchSummary(branch, 0, None, active))
                    continue
                # A path's length is its live messages: the head's depth + 1, less tombstones.
                length: int = row["depth"] + 1
                last: Node | None = _node_from_row(row, row["text"])
                if shallowest is not None and row["depth"] >= shallowest:
                    length, last = self._below_tombstones(conn, chat_id, dict(row), shallowest)
                result.append(BranchSummary(branch, length, last, active))
            return result

    def _below_tombstones(
        self, conn: Connection, chat_id: str, head: Mapping[str, Any], shallowest: int
    ) -> tuple[int, Node | None]:
        """Length and last live message of a path that may cross tombstones.

        Walks up from the head only as far as the shallowest tombstone's parent.
        """
        walked = [
            (node_id, deleted)
            for node_id, _, deleted in _climb_marks(conn, chat_id, head["id"], shallowest - 1)
        ]
        gone = sum(1 for _, deleted in walked if deleted)
        last_id = next((node_id for node_id, deleted in walked if not deleted), None)
        last = None
        if last_id is not None:
            row = conn.execute(_node_select().where(t.nodes.c.id == last_id)).mappings().one()
            last = _node_from_row(row, row["text"])
        return head["depth"] + 1 - gone, last

    def checkpoints(self, chat_id: str) -> list[Checkpoint]:
        with self._read() as conn:
            self._chat_row(conn, chat_id)
            return _checkpoints(conn, chat_id)
