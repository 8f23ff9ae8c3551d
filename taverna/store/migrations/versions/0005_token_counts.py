"""Token counts of message texts, per tokenizer, stored beside the texts; hidden
messages get a partial index.

A process that starts cold reads the counts of the messages a turn needs instead of
tokenizing them again; a count goes when its text goes. A turn that reads only the end
of a long path counts the hidden messages above it (the lorebook's message clock skips
them); the partial index tells at once whether there are any, like the tombstones'.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "token_counts",
        sa.Column(
            "hash",
            sa.String(64),
            sa.ForeignKey("contents.hash", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("tokenizer", sa.String(64), primary_key=True),
        sa.Column("count", sa.Integer, nullable=False),
    )
    op.create_index(
        "ix_nodes_hidden",
        "nodes",
        ["chat_id", "depth"],
        sqlite_where=sa.text("hidden = 1"),
        postgresql_where=sa.text("hidden"),
    )


def downgrade() -> None:
    op.drop_index("ix_nodes_hidden", table_name="nodes")
    op.drop_table("token_counts")
