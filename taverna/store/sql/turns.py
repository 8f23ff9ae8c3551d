"""What a turn reads: a path's end, its user messages, what changed, messages by id."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from taverna.errors import NotFound
from taverna.model.chat import ChatState, Node, PathTail
from taverna.store import schema as t
from taverna.store.sql.base import SqlBase
from taverna.store.sql.positions import _hidden_above, _live_above, _shallowest_tombstone
from taverna.store.sql.rows import (
    _RAW_NODE_SQL,
    _kept_nodes,
    _node_from_row,
    _node_select,
    _raw_json,
)

# A climb from a node (itself included) until `limit` live messages are found: the rows
# a turn reads, without the candidate counts a page shows; with where each node's state
# comes from (the start's names the state in force when the tail records none).
_TAIL_SQL = f"""
    WITH RECURSIVE walk(id, parent_id, seen) AS (
        SELECT id, parent_id, CASE WHEN deleted = :no THEN 1 ELSE 0 END
        FROM nodes WHERE id = :start AND chat_id = :chat
        UNION ALL
        SELECT n.id, n.parent_id, w.seen + CASE WHEN n.deleted = :no THEN 1 ELSE 0 END
        FROM nodes n JOIN walk w ON n.id = w.parent_id
        WHERE w.seen < :limit
    )
    SELECT {_RAW_NODE_SQL}, c.text, n.state_from FROM walk w
    CROSS JOIN nodes n  -- the walk outside, on either database (see `paths`)
    JOIN contents c ON c.hash = n.content_hash
    WHERE n.id = w.id
    ORDER BY n.depth
"""
_TAIL = sa.text(_TAIL_SQL)  # built once: every turn runs it
_STATE = sa.select(t.nodes.c.state).where(t.nodes.c.id == sa.bindparam("id"))
# The nodes written after a revision (an undo or a redo: those of the revision it undid).
_CHANGED = sa.text(
    """
    SELECT DISTINCT key FROM changes
    WHERE chat_id = :chat AND entity = 'node' AND (
        revision > :since OR revision IN (
            SELECT target FROM revisions
            WHERE chat_id = :chat AND number > :since AND target IS NOT NULL
        )
    )
    """
)


class SqlTurnReads(SqlBase):
    """The reads a turn makes, each costing what it returns."""

    def path_tail(
        self, chat_id: str, node_id: str, *, limit: int, counted: bool = True
    ) -> PathTail:
        with self._read() as conn:
            rows = conn.execute(
                _TAIL,
                {"start": node_id, "chat": chat_id, "no": False, "limit": max(limit, 1)},
            ).all()
            if not rows:
                raise NotFound(
                    f"no message {node_id} in this chat",
                    field="node_id",
                    code="no_message_in_this_chat",
                    params={"node_id": str(node_id)},
                )
            before = hidden = 0
            first = rows[0]
            if counted and first[2]:  # messages above the tail: count them
                shallowest = _shallowest_tombstone(conn, chat_id)
                before = _live_above(conn, chat_id, first[0], first[8], shallowest)
                hidden = _hidden_above(conn, chat_id, first[0], first[8])
            # The state in force is the nearest one recorded, in the tail or above it.
            recorded = next((row[11] for row in reversed(rows) if row[11] is not None), None)
            source = rows[-1][14]  # the start, deepest of the climb
            if recorded is not None:
                state = ChatState.from_json(_raw_json(recorded))
            elif source is None:
                state = ChatState.from_json(self._chat_row(conn, chat_id)["base_state"] or {})
            else:
                found = conn.execute(_STATE, {"id": source}).scalar()
                state = ChatState.from_json(_raw_json(found) if found is not None else {})
        nodes = _kept_nodes(rows, chat_id)
        return PathTail(nodes, before, before - hidden, state)

    def user_messages_to(self, chat_id: str, node_id: str) -> int:
        with self._read() as conn:
            found = conn.execute(
                sa.text(
                    """
                    WITH RECURSIVE up(id, parent_id, role, deleted) AS (
                        SELECT id, parent_id, role, deleted FROM nodes
                        WHERE id = :start AND chat_id = :chat
                        UNION ALL
                        SELECT n.id, n.parent_id, n.role, n.deleted
                        FROM nodes n JOIN up ON n.id = up.parent_id
                    )
                    SELECT COUNT(*) FROM up WHERE role = 'user' AND deleted = :no
                    """
                ),
                {"start": node_id, "chat": chat_id, "no": False},
            ).scalar()
        return int(found or 0)

    def changed_nodes(self, chat_id: str, since: int) -> frozenset[str]:
        with self._read() as conn:
            rows = conn.execute(_CHANGED, {"chat": chat_id, "since": since}).scalars()
            return frozenset(rows)

    def get_nodes(self, chat_id: str, node_ids: Sequence[str]) -> list[Node]:
        out: list[Node] = []
        with self._read() as conn:
            ids = sorted(set(node_ids))
            for start in range(0, len(ids), 500):
                # By primary key alone: naming the chat in SQL would lead SQLite to walk the
                # chat's index instead, which costs the chat's length.
                query = _node_select().where(t.nodes.c.id.in_(ids[start : start + 500]))
                out.extend(
                    _node_from_row(r, r["text"])
                    for r in conn.execute(query).mappings()
                    if r["chat_id"] == chat_id
                )
        return out
