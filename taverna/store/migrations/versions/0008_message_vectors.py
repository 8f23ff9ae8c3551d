"""Vectors for recall by meaning: each message's embedding per model, and other texts'.

`message_vectors.seq` only grows (SQLite AUTOINCREMENT, a PostgreSQL identity), so a
process that keeps a chat's vectors in memory reads only the rows added since it last
looked. A message whose text changed has a vector of another `content_hash`: it is due
for embedding again.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "message_vectors",
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(
            "chat_id", sa.String(36), sa.ForeignKey("chats.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column(
            "node_id", sa.String(36), sa.ForeignKey("nodes.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("model", sa.String(64), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("vector", sa.LargeBinary, nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_message_vectors_node", "message_vectors", ["node_id", "model"], unique=True)
    op.create_index("ix_message_vectors_chat", "message_vectors", ["chat_id", "model", "seq"])
    op.create_table(
        "text_vectors",
        sa.Column("model", sa.String(64), primary_key=True),
        sa.Column("hash", sa.String(64), primary_key=True),
        sa.Column("vector", sa.LargeBinary, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("text_vectors")
    op.drop_index("ix_message_vectors_chat", table_name="message_vectors")
    op.drop_index("ix_message_vectors_node", table_name="message_vectors")
    op.drop_table("message_vectors")
