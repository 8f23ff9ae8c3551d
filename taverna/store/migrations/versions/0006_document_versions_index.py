"""Documents' versions are read from an index alone.

Every turn reads the versions (id, kind, name, revision, times) of the documents it
uses. In SQLite a row's later columns sit after its content, so reading a big
lorebook's revision walked through every page of its text; an index holding the
version columns answers the turn's question without touching the rows.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_VERSION_COLUMNS = ["owner", "kind", "name", "id", "revision", "created", "updated"]


def upgrade() -> None:
    op.create_index("ix_documents_versions", "documents", _VERSION_COLUMNS)
    op.drop_index("ix_documents_kind", table_name="documents")


def downgrade() -> None:
    op.create_index("ix_documents_kind", "documents", ["owner", "kind", "name"])
    op.drop_index("ix_documents_versions", table_name="documents")
