"""Index a chat's messages by the revision that last wrote them, so the embedding backlog
finds what a write added or changed in a long chat without reading the whole chat.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_nodes_revision", "nodes", ["chat_id", "revision"])


def downgrade() -> None:
    op.drop_index("ix_nodes_revision", table_name="nodes")
