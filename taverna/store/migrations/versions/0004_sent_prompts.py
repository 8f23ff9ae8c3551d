"""The prompt each stored reply was generated from, as sent, in a table of its own.

Read one reply at a time (the inspector); a chat's path never joins it, so a long chat
reads as fast with a record per reply as without.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sent_prompts",
        sa.Column(
            "node_id",
            sa.String(36),
            sa.ForeignKey("nodes.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column(
            "chat_id",
            sa.String(36),
            sa.ForeignKey("chats.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("record", sa.LargeBinary, nullable=False),
    )
    op.create_index("ix_sent_prompts_chat", "sent_prompts", ["chat_id"])


def downgrade() -> None:
    op.drop_index("ix_sent_prompts_chat", table_name="sent_prompts")
    op.drop_table("sent_prompts")
