"""Deleting a chat costs its own rows: texts are found by index, chats go in the background.

- `nodes.content_hash` gets an index. Without it every text a delete removed made the
  database read all messages of every chat (the foreign key's check), so deleting a
  long chat took minutes and held the write lock all along.
- `history_texts` lists the texts a chat's change log keeps (edited versions, undone
  messages), so "is this text still used" is two index lookups instead of a read of
  every chat's history. Filled here from the change log.
- `chats.deleted`: a deleted chat is hidden at once and its rows are removed in short
  transactions (resumed after a restart), with a partial index to find such chats.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

Json = sa.JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")


def upgrade() -> None:
    op.create_index("ix_nodes_content", "nodes", ["content_hash"])
    op.create_table(
        "history_texts",
        sa.Column(
            "chat_id",
            sa.String(36),
            sa.ForeignKey("chats.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("hash", sa.String(64), sa.ForeignKey("contents.hash"), primary_key=True),
    )
    op.create_index("ix_history_texts_hash", "history_texts", ["hash"])
    op.add_column(
        "chats", sa.Column("deleted", sa.Boolean, nullable=False, server_default=sa.false())
    )
    op.create_index(
        "ix_chats_deleted",
        "chats",
        ["id"],
        sqlite_where=sa.text("deleted = 1"),
        postgresql_where=sa.text("deleted"),
    )
    _fill_history_texts()


def _fill_history_texts() -> None:
    """The texts each chat's change log names: both sides of every edit, and the text of
    every logged insert whose message is gone (undone)."""
    changes = sa.table(
        "changes",
        sa.column("chat_id", sa.String),
        sa.column("entity", sa.String),
        sa.column("key", sa.String),
        sa.column("field", sa.String),
        sa.column("before", Json),
        sa.column("after", Json),
    )
    nodes = sa.table("nodes", sa.column("id", sa.String))
    history = sa.table(
        "history_texts", sa.column("chat_id", sa.String), sa.column("hash", sa.String)
    )
    gone = ~sa.exists().where(nodes.c.id == changes.c.key)
    logged = sa.select(changes.c.chat_id, changes.c.field, changes.c.before, changes.c.after).where(
        changes.c.entity == "node",
        (changes.c.field == "content_hash") | ((changes.c.field == "*") & gone),
    )
    conn = op.get_bind()
    pairs: set[tuple[str, str]] = set()
    for chat_id, field, before, after in conn.execute(logged):
        if field == "content_hash":
            pairs.update((chat_id, value) for value in (before["v"], after["v"]) if value)
        elif after["v"] is not None:
            pairs.add((chat_id, after["v"]["content_hash"]))
    rows = [{"chat_id": c, "hash": h} for c, h in sorted(pairs)]
    for start in range(0, len(rows), 1000):
        conn.execute(history.insert(), rows[start : start + 1000])


def downgrade() -> None:
    op.drop_index("ix_chats_deleted", table_name="chats")
    op.drop_column("chats", "deleted")
    op.drop_index("ix_history_texts_hash", table_name="history_texts")
    op.drop_table("history_texts")
    op.drop_index("ix_nodes_content", table_name="nodes")
