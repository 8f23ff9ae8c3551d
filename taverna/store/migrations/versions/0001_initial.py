"""The first tables: chats and their trees, history, and library documents.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

Json = sa.JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")
Id = sa.String(36)
Stamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "chats",
        sa.Column("id", Id, primary_key=True),
        sa.Column("owner", sa.String(200), nullable=False, server_default=""),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("characters", Json, nullable=False),
        sa.Column("group_id", sa.String(200)),
        sa.Column("user_name", sa.Text, nullable=False, server_default=""),
        sa.Column("active_leaf_id", Id),
        sa.Column("active_branch_id", Id),
        sa.Column("base_state", Json, nullable=False),
        sa.Column("metadata", Json, nullable=False),
        sa.Column("created", Stamp, nullable=False),
        sa.Column("updated", Stamp, nullable=False),
        sa.Column("revision", sa.Integer, nullable=False),
    )
    op.create_index("ix_chats_owner_updated", "chats", ["owner", "updated"])
    op.create_table(
        "contents",
        sa.Column("hash", sa.String(64), primary_key=True),
        sa.Column("text", sa.Text, nullable=False),
    )
    op.create_table(
        "nodes",
        sa.Column("id", Id, primary_key=True),
        sa.Column("chat_id", Id, sa.ForeignKey("chats.id", ondelete="CASCADE"), nullable=False),
        sa.Column("parent_id", sa.String(36), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("speaker", sa.Text, nullable=False, server_default=""),
        sa.Column("content_hash", sa.String(64), sa.ForeignKey("contents.hash"), nullable=False),
        sa.Column("hidden", sa.Boolean, nullable=False),
        sa.Column("deleted", sa.Boolean, nullable=False),
        sa.Column("created", Stamp, nullable=False),
        sa.Column("depth", sa.Integer, nullable=False),
        sa.Column("generation", Json),
        sa.Column("extras", Json, nullable=False),
        sa.Column("state", Json),
        sa.Column("state_from", sa.String(36)),
        sa.Column("revision", sa.Integer, nullable=False),
    )
    op.create_index("ix_nodes_siblings", "nodes", ["chat_id", "parent_id", "id"])
    op.create_table(
        "selections",
        sa.Column("chat_id", Id, sa.ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("parent_id", sa.String(36), primary_key=True),
        sa.Column("child_id", Id, nullable=False),
    )
    op.create_table(
        "branches",
        sa.Column("id", Id, primary_key=True),
        sa.Column("chat_id", Id, sa.ForeignKey("chats.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("head_id", Id),
        sa.Column("created", Stamp, nullable=False),
    )
    op.create_index("ix_branches_chat", "branches", ["chat_id"])
    op.create_table(
        "checkpoints",
        sa.Column("id", Id, primary_key=True),
        sa.Column("chat_id", Id, sa.ForeignKey("chats.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("node_id", Id, nullable=False),
        sa.Column("created", Stamp, nullable=False),
    )
    op.create_index("ix_checkpoints_chat", "checkpoints", ["chat_id"])
    op.create_table(
        "revisions",
        sa.Column("chat_id", Id, sa.ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("number", sa.Integer, primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("label", sa.Text, nullable=False),
        sa.Column("created", Stamp, nullable=False),
        sa.Column("target", sa.Integer),
        sa.Column("undone", sa.Boolean, nullable=False),
        sa.Column("redoable", sa.Boolean, nullable=False),
    )
    op.create_index("ix_revisions_undo", "revisions", ["chat_id", "undone", "redoable"])
    op.create_table(
        "changes",
        sa.Column("chat_id", Id, sa.ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("revision", sa.Integer, primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True),
        sa.Column("entity", sa.String(16), nullable=False),
        sa.Column("key", sa.String(36), nullable=False),
        sa.Column("field", sa.String(32), nullable=False),
        sa.Column("before", Json, nullable=False),
        sa.Column("after", Json, nullable=False),
    )
    op.create_index("ix_changes_key", "changes", ["chat_id", "key"])
    op.create_table(
        "documents",
        sa.Column("id", Id, primary_key=True),
        sa.Column("owner", sa.String(200), nullable=False, server_default=""),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("data", Json, nullable=False),
        sa.Column("blob", sa.LargeBinary),
        sa.Column("revision", sa.Integer, nullable=False),
        sa.Column("created", Stamp, nullable=False),
        sa.Column("updated", Stamp, nullable=False),
    )
    op.create_index("ix_documents_kind", "documents", ["owner", "kind", "name"])


def downgrade() -> None:
    for table in (
        "documents",
        "changes",
        "revisions",
        "checkpoints",
        "branches",
        "selections",
        "nodes",
        "contents",
        "chats",
    ):
        op.drop_table(table)
