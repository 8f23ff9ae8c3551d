"""A chat's history: its revisions and the earlier texts of a message."""

from __future__ import annotations

import sqlalchemy as sa

from taverna.errors import NotFound
from taverna.model.chat import ContentVersion, Revision
from taverna.store import schema as t
from taverna.store.sql.base import SqlBase
from taverna.store.sql.rows import _aware, _revision_from_row


class SqlHistory(SqlBase):
    """Revisions and content history."""

    def revisions(self, chat_id: str, *, limit: int = 100) -> list[Revision]:
        with self._read() as conn:
            self._chat_row(conn, chat_id)
            rows = conn.execute(
                sa.select(t.revisions)
                .where(t.revisions.c.chat_id == chat_id)
                .order_by(t.revisions.c.number.desc())
                .limit(limit)
            ).mappings()
            return [_revision_from_row(r) for r in rows]

    def content_history(self, chat_id: str, node_id: str) -> list[ContentVersion]:
        with self._read() as conn:
            node = (
                conn.execute(
                    sa.select(t.nodes).where(t.nodes.c.id == node_id, t.nodes.c.chat_id == chat_id)
                )
                .mappings()
                .first()
            )
            if node is None:
                raise NotFound(
                    f"no message {node_id} in this chat",
                    field="node_id",
                    code="no_message_in_this_chat",
                    params={"node_id": str(node_id)},
                )
            logged = conn.execute(
                sa.select(
                    t.changes.c.revision, t.changes.c.field, t.changes.c.before, t.changes.c.after
                )
                .where(
                    t.changes.c.chat_id == chat_id,
                    t.changes.c.key == node_id,
                    t.changes.c.entity == "node",
                )
                .order_by(t.changes.c.revision, t.changes.c.seq)
            ).all()
            stamps = dict(
                conn.execute(
                    sa.select(t.revisions.c.number, t.revisions.c.created).where(
                        t.revisions.c.chat_id == chat_id
                    )
                ).all()
            )
            versions: list[tuple[int, str]] = []
            for revision, column, before, after in logged:
                if column == "*" and after["v"] is not None:
                    versions.append((revision, after["v"]["content_hash"]))
                elif column == "content_hash":
                    if not versions:  # imported node: its first text predates the log
                        versions.append((1, before["v"]))
                    versions.append((revision, after["v"]))
            if not versions:
                versions.append((node["revision"], node["content_hash"]))
            hashes = {h for _, h in versions}
            texts = dict(
                conn.execute(
                    sa.select(t.contents.c.hash, t.contents.c.text).where(
                        t.contents.c.hash.in_(hashes)
                    )
                ).all()
            )
        return [
            ContentVersion(node_id, revision, texts[h], _aware(stamps.get(revision)))
            for revision, h in versions
        ]
