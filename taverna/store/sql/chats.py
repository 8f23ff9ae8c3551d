"""Chats as wholes: creating, opening for a write, getting, listing and deleting them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from taverna.model.chat import Chat, ChatListing, RevisionKind, new_id
from taverna.store import schema as t
from taverna.store.repository import NewChat
from taverna.store.sql.base import SqlBase, refuse_if_moved
from taverna.store.sql.rows import _chars_json, _chat_from_row, _utc
from taverna.store.sql.writer import SqlChatWriter


def _new_chat_row(new: NewChat, now: datetime) -> dict[str, Any]:
    created = _utc(new.created or now)
    return {
        "id": new.id or new_id(),
        "owner": new.owner,
        "title": new.title,
        "characters": _chars_json(new.characters),
        "group_id": new.group_id,
        "user_name": new.user_name,
        "active_leaf_id": None,
        "active_branch_id": None,
        "base_state": new.base_state.to_json(),
        "metadata": dict(new.metadata),
        "created": created,
        "updated": created,
        "revision": 1,
    }


def _insert_chat(conn: Connection, row: dict[str, Any], label: str, now: datetime) -> None:
    conn.execute(t.chats.insert(), row)
    conn.execute(
        t.revisions.insert().values(
            chat_id=row["id"],
            number=1,
            kind=RevisionKind.CREATE.value,
            label=label,
            created=now,
            target=None,
            undone=False,
            redoable=False,
        )
    )


# Chats whose last write's row this process keeps for the next write to resume from.
WRITTEN_KEPT = 1024


class SqlChats(SqlBase):
    """Chats as wholes, and the unit of work that writes one."""

    def create_chat(self, new: NewChat) -> Chat:
        now = _utc(self.clock())
        row = _new_chat_row(new, now)
        branch_id = new_id()
        row["active_branch_id"] = branch_id
        with self.engine.begin() as conn:
            _insert_chat(conn, row, "create", now)
            conn.execute(
                t.branches.insert().values(
                    id=branch_id, chat_id=row["id"], name="main", head_id=None, created=now
                )
            )
        return _chat_from_row(row)

    @contextmanager
    def write(self, chat_id: str, *, revision: int, label: str) -> Iterator[SqlChatWriter]:
        now = _utc(self.clock())
        # SQLite: a chat this process wrote last is resumed from what that write left (the
        # row at a revision never changes), with no claim; taken out while it is in use.
        with self._written_lock:
            kept = self._written.pop(chat_id, None)
        with self.engine.begin() as conn:
            if kept is not None and kept[0] == revision:
                writer = SqlChatWriter.resume(conn, kept[1], revision, label, now)
            else:
                writer = SqlChatWriter.claim(conn, chat_id, revision, label, now)
            try:
                yield writer
                writer.finish()
            except Exception:
                if writer.resumed_from is not None:
                    # What failed may have been read from a row since moved on: say so.
                    refuse_if_moved(conn, chat_id, revision)
                raise
        row = writer.kept_row() if self.engine.dialect.name == "sqlite" else None
        if row is not None:
            with self._written_lock:
                self._written[chat_id] = (writer.revision, row)
                while len(self._written) > WRITTEN_KEPT:
                    del self._written[next(iter(self._written))]

    def get_chat(self, chat_id: str) -> Chat:
        with self._read() as conn:
            return _chat_from_row(self._chat_row(conn, chat_id))

    def list_chats(self, *, owner: str = "", character: str | None = None) -> list[ChatListing]:
        leaf = t.nodes.alias("leaf")
        node_count = (
            sa.select(sa.func.count()).where(t.nodes.c.chat_id == t.chats.c.id).scalar_subquery()
        )
        branch_count = (
            sa.select(sa.func.count()).where(t.branches.c.chat_id == t.chats.c.id).scalar_subquery()
        )
        checkpoint_count = (
            sa.select(sa.func.count())
            .where(t.checkpoints.c.chat_id == t.chats.c.id)
            .scalar_subquery()
        )
        query = (
            sa.select(
                t.chats,
                leaf.c.depth.label("leaf_depth"),
                node_count.label("node_count"),
                branch_count.label("branch_count"),
                checkpoint_count.label("checkpoint_count"),
            )
            .outerjoin(leaf, leaf.c.id == t.chats.c.active_leaf_id)
            .where(t.chats.c.owner == owner, t.chats.c.deleted == sa.false())
            .order_by(t.chats.c.updated.desc(), t.chats.c.id.desc())
        )
        with self._read() as conn:
            rows = conn.execute(query).mappings().all()
        result = []
        for row in rows:
            chat = _chat_from_row(row)
            if character is not None and not any(
                character in (c.name, c.document_id) for c in chat.characters
            ):
                continue
            depth = row["leaf_depth"]
            result.append(
                ChatListing(
                    chat=chat,
                    path_length=0 if depth is None else depth + 1,
                    node_count=row["node_count"],
                    branch_count=row["branch_count"],
                    checkpoint_count=row["checkpoint_count"],
                )
            )
        return result
