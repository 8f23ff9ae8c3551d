"""Index tombstones per chat, so "does this chat have deleted messages" is one lookup.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_nodes_deleted", "nodes", ["chat_id", "deleted"])


def downgrade() -> None:
    op.drop_index("ix_nodes_deleted", table_name="nodes")
