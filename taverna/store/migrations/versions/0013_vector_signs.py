"""Each message vector's sign bits beside it (bit i set: component i is above zero).

A process that searches a chat by sign bits in memory reads these (64 bytes a vector of
512 floats) instead of the floats (2 KB). Rows written before this revision hold NULL:
their bits are made from the floats when read.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("message_vectors") as batch:
        batch.add_column(sa.Column("signs", sa.LargeBinary, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("message_vectors") as batch:
        batch.drop_column("signs")
