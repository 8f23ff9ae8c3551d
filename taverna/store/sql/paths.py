"""The active path, read whole, from its end, or a page before or after a cursor."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from taverna.model.chat import ActivePath, PathEntry, PathWindow
from taverna.store.sql.base import SqlBase
from taverna.store.sql.positions import _live_above, _node_place, _path_total, _shallowest_tombstone
from taverna.store.sql.rows import _RAW_NODE_SQL, _chat_from_row, _node_from_raw
from taverna.store.sql.tree import _PATH_SQL, _state_at

# ------------------------------------------------------------ path windows
#
# A page of the active path is read by walking from a known node, never from the root
# or the leaf: up the parent links (`path_before`) or down the remembered choices
# (`path_after`), stopping once the page has its live messages.

_SIBLINGS = (
    "(SELECT COUNT(*) FROM nodes s WHERE s.chat_id = :chat"
    " AND s.parent_id = n.parent_id AND s.deleted = :no{extra})"
)
# `walk CROSS JOIN nodes`: SQLite keeps the walk's few rows outside, whatever its
# statistics say (3.50 would scan every node and look each up in the walk); PostgreSQL
# plans it as the inner join it is. The same in the other path reads, and in the descent's
# step (`walk CROSS JOIN selections`: else each step scans the chat's every selection).
_WINDOW_ROWS = f"""
    SELECT {_RAW_NODE_SQL}, c.text,
        {_SIBLINGS.format(extra="")} AS candidate_count,
        {_SIBLINGS.format(extra=" AND s.id < n.id")} AS candidate_index
    FROM walk w
    CROSS JOIN nodes n
    JOIN contents c ON c.hash = n.content_hash
    WHERE n.id = w.id
    ORDER BY n.depth
"""
_CLIMB_SQL = (
    """
    WITH RECURSIVE walk(id, parent_id, seen) AS (
        SELECT id, parent_id, CASE WHEN deleted = :no AND :own = 1 THEN 1 ELSE 0 END
        FROM nodes WHERE id = :start AND chat_id = :chat
        UNION ALL
        SELECT n.id, n.parent_id, w.seen + CASE WHEN n.deleted = :no THEN 1 ELSE 0 END
        FROM nodes n JOIN walk w ON n.id = w.parent_id
        WHERE w.seen < :limit
    )
    """
    + _WINDOW_ROWS
)
_DESCENT_SQL = (
    """
    WITH RECURSIVE walk(id, seen) AS (
        SELECT s.child_id, CASE WHEN n.deleted = :no THEN 1 ELSE 0 END
        FROM selections s JOIN nodes n ON n.id = s.child_id
        WHERE s.chat_id = :chat AND s.parent_id = :start AND :start != :leaf
        UNION ALL
        SELECT s.child_id, w.seen + CASE WHEN n.deleted = :no THEN 1 ELSE 0 END
        FROM walk w
        CROSS JOIN selections s
        JOIN nodes n ON n.id = s.child_id
        WHERE s.chat_id = :chat AND s.parent_id = w.id AND w.seen < :limit AND w.id != :leaf
    )
    """
    + _WINDOW_ROWS
)

# The live message `count` places up from the leaf (the leaf itself is 1): a climb over ids
# alone, which stops there.
_NTH_UP_SQL = """
    WITH RECURSIVE walk(id, parent_id, seen) AS (
        SELECT id, parent_id, CASE WHEN deleted = :no THEN 1 ELSE 0 END
        FROM nodes WHERE id = :leaf AND chat_id = :chat
        UNION ALL
        SELECT n.id, n.parent_id, w.seen + CASE WHEN n.deleted = :no THEN 1 ELSE 0 END
        FROM nodes n JOIN walk w ON n.id = w.parent_id
        WHERE w.seen < :count
    )
    SELECT id FROM walk WHERE seen = :count LIMIT 1
"""


def _window_entries(rows: Sequence[Sequence[Any]], start: int) -> tuple[PathEntry, ...]:
    """Window rows (path order, tombstones included) as live entries from `start` on."""
    entries: list[PathEntry] = []
    position = start
    for row in rows:
        if row[6]:  # deleted: on the path, never shown
            continue
        node = _node_from_raw(row, row[13])
        entries.append(PathEntry(node, position, row[15], max(row[14], 1)))
        position += 1
    return tuple(entries)


class SqlPaths(SqlBase):
    """The active path, whole or in windows."""

    def active_path(
        self, chat_id: str, *, include_deleted: bool = False, tail: int | None = None
    ) -> ActivePath:
        if tail is None:
            walk = _PATH_SQL
        else:
            # Climb only until `tail` live messages are collected.
            walk = """
            WITH RECURSIVE path(id, parent_id, seen) AS (
                SELECT id, parent_id, CASE WHEN deleted = :no THEN 1 ELSE 0 END
                FROM nodes WHERE id = :leaf AND chat_id = :chat
                UNION ALL
                SELECT n.id, n.parent_id, p.seen + CASE WHEN n.deleted = :no THEN 1 ELSE 0 END
                FROM nodes n JOIN path p ON n.id = p.parent_id
                WHERE p.seen < :tail
            )
            """
        sql = sa.text(
            walk
            + f"""
            SELECT {_RAW_NODE_SQL}, c.text,
                {_SIBLINGS.format(extra="")} AS candidate_count,
                {_SIBLINGS.format(extra=" AND s.id < n.id")} AS candidate_index
            FROM path p
            CROSS JOIN nodes n
            JOIN contents c ON c.hash = n.content_hash
            WHERE n.id = p.id
            ORDER BY n.depth
            """
        )
        params = {"leaf": "", "chat": chat_id, "no": False, "tail": max(tail or 0, 1)}
        with self._read() as conn:
            chat = _chat_from_row(self._chat_row(conn, chat_id))
            leaf = chat.active_leaf_id
            params["leaf"] = leaf or ""
            rows = conn.execute(sql, params).all() if leaf and tail != 0 else []
            position = 0
            state = chat.base_state
            if tail is not None and leaf:
                state = _state_at(conn, chat_id, leaf, chat.base_state.to_json())
                if rows:  # the live messages above the window's first one
                    shallowest = _shallowest_tombstone(conn, chat_id)
                    position = _live_above(conn, chat_id, rows[0][0], rows[0][8], shallowest)
        entries: list[PathEntry] = []
        for row in rows:
            node = _node_from_raw(row, row[13])
            if tail is None and node.state is not None:
                state = node.state
            if node.deleted and not include_deleted:
                continue
            count, index = row[14], row[15]
            if node.deleted:
                count += 1
            entries.append(PathEntry(node, position, index, max(count, 1)))
            if not node.deleted:
                position += 1
        return ActivePath(chat=chat, entries=tuple(entries), state=state)

    def path_before(self, chat_id: str, node_id: str | None, *, limit: int) -> PathWindow:
        with self._read() as conn:
            chat = _chat_from_row(self._chat_row(conn, chat_id))
            start = node_id if node_id is not None else chat.active_leaf_id
            if start is None:
                return PathWindow(chat, (), 0, 0)
            place = _node_place(conn, chat_id, start)
            own = 1 if node_id is None else 0
            rows = conn.execute(
                sa.text(_CLIMB_SQL),
                {"start": start, "chat": chat_id, "no": False, "own": own, "limit": max(limit, 0)},
            ).all()
            if not own:
                rows = rows[:-1]  # the node itself closes the climb
            if limit <= 0:
                rows = []
            shallowest = _shallowest_tombstone(conn, chat_id)
            total = _path_total(conn, chat, shallowest, place if own else None)
            if rows:
                first = rows[0]
                begin = _live_above(conn, chat_id, first[0], first[8], shallowest)
            else:
                begin = _live_above(conn, chat_id, start, place[0], shallowest)
                begin += 1 if own and not place[1] else 0
            return PathWindow(chat, _window_entries(rows, begin), begin, total)

    def path_after(self, chat_id: str, node_id: str | None, *, limit: int) -> PathWindow:
        with self._read() as conn:
            chat = _chat_from_row(self._chat_row(conn, chat_id))
            shallowest = _shallowest_tombstone(conn, chat_id)
            begin = 0
            if node_id is not None:
                depth, deleted = _node_place(conn, chat_id, node_id)
                begin = _live_above(conn, chat_id, node_id, depth, shallowest) + (not deleted)
            rows: Sequence[Sequence[Any]] = []
            if chat.active_leaf_id is not None and limit > 0:
                params = {
                    "start": node_id or "",
                    "leaf": chat.active_leaf_id,
                    "chat": chat_id,
                    "no": False,
                    "limit": limit,
                }
                rows = conn.execute(sa.text(_DESCENT_SQL), params).all()
            total = _path_total(conn, chat, shallowest)
            return PathWindow(chat, _window_entries(rows, begin), begin, total)

    def path_at(self, chat_id: str, position: int, *, limit: int) -> PathWindow:
        with self._read() as conn:
            chat = _chat_from_row(self._chat_row(conn, chat_id))
            total = _path_total(conn, chat, _shallowest_tombstone(conn, chat_id))
            start = max(0, min(position, total - limit))
            before: str | None = None
            if start > 0 and chat.active_leaf_id is not None:
                before = conn.execute(
                    sa.text(_NTH_UP_SQL),
                    {
                        "leaf": chat.active_leaf_id,
                        "chat": chat_id,
                        "no": False,
                        "count": total - start + 1,
                    },
                ).scalar()
        return self.path_after(chat_id, before, limit=limit)
