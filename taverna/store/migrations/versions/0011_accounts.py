"""Accounts: users with hashed passwords and quotas, their sessions, generations started.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("password_hash", sa.Text, nullable=False),
        sa.Column("admin", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("quota_bytes", sa.BigInteger),
        sa.Column("quota_generations", sa.Integer),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "sessions",
        sa.Column("token_hash", sa.String(64), primary_key=True),
        sa.Column(
            "user_id",
            sa.String(36),
            sa.ForeignKey("users.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("csrf", sa.String(64), nullable=False),
        sa.Column("expires", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_sessions_user", "sessions", ["user_id"])
    op.create_table(
        "generation_log",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("user_id", sa.String(200), nullable=False),
        sa.Column("started", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_generation_log_user", "generation_log", ["user_id", "started"])


def downgrade() -> None:
    op.drop_table("generation_log")
    op.drop_table("sessions")
    op.drop_table("users")
