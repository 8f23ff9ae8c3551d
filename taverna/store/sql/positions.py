"""Where a message stands on its path: the live and hidden messages above it."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from taverna.errors import NotFound
from taverna.model.chat import Chat
from taverna.store import schema as t


def _shallowest_tombstone(conn: Connection, chat_id: str) -> int | None:
    """The depth of the chat's shallowest deleted message (on the partial index), if any."""
    found: int | None = conn.execute(
        sa.select(sa.func.min(t.nodes.c.depth)).where(
            t.nodes.c.chat_id == chat_id, t.nodes.c.deleted == sa.true()
        )
    ).scalar()
    return found


def _climb_marks(
    conn: Connection, chat_id: str, start: str, floor: int
) -> list[tuple[str, bool, bool]]:
    """`(id, hidden, deleted)` of a node and its ancestors down to depth `floor`, the
    node first: the stretch of a path that a count of its marked messages must see."""
    rows = conn.execute(
        sa.text(
            """
            WITH RECURSIVE up(id, parent_id, hidden, deleted, depth) AS (
                SELECT id, parent_id, hidden, deleted, depth FROM nodes
                WHERE id = :start AND chat_id = :chat
                UNION ALL
                SELECT n.id, n.parent_id, n.hidden, n.deleted, n.depth
                FROM nodes n JOIN up ON n.id = up.parent_id
                WHERE n.depth >= :floor
            )
            SELECT id, hidden, deleted FROM up ORDER BY depth DESC
            """
        ),
        {"start": start, "chat": chat_id, "floor": floor},
    ).all()
    return [(row[0], bool(row[1]), bool(row[2])) for row in rows]


def _live_above(
    conn: Connection, chat_id: str, node_id: str, depth: int, shallowest: int | None
) -> int:
    """How many live messages are above a node: its depth less the tombstones above it.

    Only the stretch below the shallowest tombstone can hold one, so a chat without
    deleted messages answers from the depth alone.
    """
    if shallowest is None or shallowest >= depth:
        return depth
    above = _climb_marks(conn, chat_id, node_id, shallowest)[1:]
    return depth - sum(1 for _, _, deleted in above if deleted)


def _hidden_above(conn: Connection, chat_id: str, node_id: str, depth: int) -> int:
    """How many live hidden messages are above a node on its path.

    Only the stretch below the shallowest hidden message can hold one (partial index),
    so a chat that hides nothing above the node answers at once.
    """
    hidden = "hidden = 1" if conn.dialect.name == "sqlite" else "hidden"
    shallowest = conn.execute(
        sa.text(f"SELECT MIN(depth) FROM nodes WHERE chat_id = :chat AND {hidden}"),
        {"chat": chat_id},
    ).scalar()
    if shallowest is None or shallowest >= depth:
        return 0
    above = _climb_marks(conn, chat_id, node_id, shallowest)[1:]
    return sum(1 for _, hidden, deleted in above if hidden and not deleted)


def _node_place(conn: Connection, chat_id: str, node_id: str) -> tuple[int, bool]:
    """A node's depth and whether it is deleted; NotFound if the chat has no such node."""
    row = conn.execute(
        sa.select(t.nodes.c.depth, t.nodes.c.deleted).where(
            t.nodes.c.id == node_id, t.nodes.c.chat_id == chat_id
        )
    ).first()
    if row is None:
        raise NotFound(
            f"no message {node_id} in this chat",
            field="node_id",
            code="no_message_in_this_chat",
            params={"node_id": str(node_id)},
        )
    return int(row[0]), bool(row[1])


def _path_total(
    conn: Connection, chat: Chat, shallowest: int | None, leaf: tuple[int, bool] | None = None
) -> int:
    """Live messages on the whole active path, from the leaf's depth and the tombstones."""
    if chat.active_leaf_id is None:
        return 0
    depth, deleted = leaf or _node_place(conn, chat.id, chat.active_leaf_id)
    return _live_above(conn, chat.id, chat.active_leaf_id, depth, shallowest) + (not deleted)
