"""Message texts, stored once under their SHA-256 and kept while any chat uses them."""

from __future__ import annotations

import hashlib

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection

from taverna.errors import TavernaError
from taverna.store import schema as t


def content_hash(text: str) -> str:
    """The key a text is stored under (SHA-256, hex)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _put_content(conn: Connection, text: str) -> str:
    key = content_hash(text)
    if conn.dialect.name == "sqlite":
        # SQLite runs one write at a time: nothing can delete the row before we commit.
        found = conn.execute(sa.select(t.contents.c.hash).where(t.contents.c.hash == key)).first()
        if found is None:
            conn.execute(t.contents.insert().values(hash=key, text=text))
        return key
    # PostgreSQL: another transaction may be inserting the same text, or deleting it as
    # its last chat goes. Insert if absent, then hold a key-share lock on the row until
    # commit so no delete can take it away under our messages; a row deleted while we
    # waited for that lock is simply inserted again.
    insert = postgresql.insert(t.contents).values(hash=key, text=text).on_conflict_do_nothing()
    lock = (
        sa.select(t.contents.c.hash).where(t.contents.c.hash == key).with_for_update(key_share=True)
    )
    for _ in range(5):
        conn.execute(insert)
        if conn.execute(lock).first() is not None:
            return key
    raise TavernaError("a message text kept being deleted while it was stored; try again")


def _history_hashes(
    conn: Connection, nodes_where: sa.ColumnElement[bool], changes_where: sa.ColumnElement[bool]
) -> set[str]:
    """Every text key in use: current message texts, edit history, undone messages."""
    used = set(
        conn.execute(sa.select(t.nodes.c.content_hash).where(nodes_where).distinct()).scalars()
    )
    # An insert's text is that of a live message (counted above) or of an earlier
    # version (an edit's `before`), except when the insert was undone: keep it for redo.
    gone = ~sa.exists().where(t.nodes.c.id == t.changes.c.key)
    logged = conn.execute(
        sa.select(t.changes.c.field, t.changes.c.before, t.changes.c.after).where(
            changes_where,
            t.changes.c.entity == "node",
            (t.changes.c.field == "content_hash") | ((t.changes.c.field == "*") & gone),
        )
    )
    for column, before, after in logged:
        if column == "content_hash":
            used.update(v for v in (before["v"], after["v"]) if v)
        elif after["v"] is not None:
            used.add(after["v"]["content_hash"])
    return used
