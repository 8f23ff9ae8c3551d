"""An index of the message vectors stored without their sign bits (written before
revision 0013), so the background backlog finds them to fill in without reading the
table: a partial index, empty once every row has its bits.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    unsigned = sa.text("signs IS NULL")
    op.create_index(
        "ix_message_vectors_unsigned",
        "message_vectors",
        ["seq"],
        sqlite_where=unsigned,
        postgresql_where=unsigned,
    )


def downgrade() -> None:
    op.drop_index("ix_message_vectors_unsigned", table_name="message_vectors")
