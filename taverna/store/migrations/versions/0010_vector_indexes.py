"""The database's own vector search: how far it has indexed each model's vectors.

The search itself is made at run time, where the database can: sqlite-vec's `vec0`
tables (one a model, created with its vectors' dimensions), pgvector's `embedding`
column on `message_vectors` (added once the extension exists). A database without
either keeps working; its rows are indexed when one is there.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "vector_indexes",
        sa.Column("model", sa.String(64), primary_key=True),
        sa.Column("dims", sa.Integer, nullable=False),
        sa.Column("synced_seq", sa.Integer, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("vector_indexes")
