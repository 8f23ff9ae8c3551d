"""Tombstones get a partial index instead of a full one.

A full (chat_id, deleted) index could be picked by SQLite for the sibling counts of
a path read, turning it from one index range per message into a scan of the chat.
A partial index holding deleted messages only is never a candidate for that query
and still answers "has this chat any deleted message" at once.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_nodes_deleted", table_name="nodes")
    op.create_index(
        "ix_nodes_tombstones",
        "nodes",
        ["chat_id"],
        sqlite_where=sa.text("deleted = 1"),
        postgresql_where=sa.text("deleted"),
    )


def downgrade() -> None:
    op.drop_index("ix_nodes_tombstones", table_name="nodes")
    op.create_index("ix_nodes_deleted", "nodes", ["chat_id", "deleted"])
