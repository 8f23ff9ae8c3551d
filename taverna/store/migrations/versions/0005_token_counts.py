"""Token counts of message texts, per tokenizer, stored beside the texts.

A process that starts cold reads the counts of the messages a turn needs instead of
tokenizing them again; a count goes when its text goes.

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


def downgrade() -> None:
    op.drop_table("token_counts")
