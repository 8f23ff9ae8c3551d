"""Message search: an index of every stored text, case and accents folded.

SQLite: an FTS5 table with the `trigram` tokenizer (finds any run of three or more
characters, so Chinese text is found with no word splitting), its rows numbered by
`search_texts` (one per text hash). PostgreSQL: `search_texts` holds the folded text
with a `pg_trgm` GIN index where the extension can be created (else searches scan).
The texts already stored are indexed here.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from taverna.store.sql.search import index_texts

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_CHUNK = 1000


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "sqlite":
        op.execute(
            "CREATE TABLE search_texts ("
            " id INTEGER PRIMARY KEY,"
            " hash VARCHAR(64) NOT NULL REFERENCES contents (hash) ON DELETE CASCADE)"
        )
        op.execute("CREATE UNIQUE INDEX ix_search_texts_hash ON search_texts (hash)")
        op.execute("CREATE VIRTUAL TABLE search_index USING fts5(text, tokenize='trigram')")
    else:
        op.execute(
            "CREATE TABLE search_texts ("
            " hash VARCHAR(64) PRIMARY KEY REFERENCES contents (hash) ON DELETE CASCADE,"
            " text TEXT NOT NULL)"
        )
        try:
            with conn.begin_nested():
                conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        except sa.exc.DBAPIError:
            pass  # not installed or not allowed: searches read the table through
        else:
            # Named with its schema: the store's own schema may not be on the search path.
            where = conn.exec_driver_sql(
                "SELECT n.nspname FROM pg_extension e"
                " JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'"
            ).scalar_one()
            quoted = '"' + where.replace('"', '""') + '"'
            op.execute(
                "CREATE INDEX ix_search_texts_trigrams ON search_texts"
                f" USING gin (text {quoted}.gin_trgm_ops)"
            )
    contents = sa.table("contents", sa.column("hash", sa.String), sa.column("text", sa.Text))
    last = ""
    while True:
        rows = conn.execute(
            sa.select(contents.c.hash, contents.c.text)
            .where(contents.c.hash > last)
            .order_by(contents.c.hash)
            .limit(_CHUNK)
        ).all()
        if not rows:
            break
        index_texts(conn, {h: text for h, text in rows})
        last = rows[-1][0]


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TABLE search_index")
    op.execute("DROP TABLE search_texts")
