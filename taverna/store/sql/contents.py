"""Message texts, stored once under their SHA-256 and kept while any chat uses them."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Connection

from taverna.errors import TavernaError
from taverna.store import schema as t
from taverna.store.sql.search import add_indexed_text, index_text, unindex_texts


def content_hash(text: str) -> str:
    """The key a text is stored under (SHA-256, hex)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# Insert a text unless it is stored already; built once (see `taverna.store.sql.writer`).
_ADD_TEXT_SQLITE = sqlite.insert(t.contents).on_conflict_do_nothing()
_HOLD_TEXT = (
    sa.select(t.contents.c.hash)
    .where(t.contents.c.hash == sa.bindparam("hash"))
    .with_for_update(key_share=True)
)


def _put_content(conn: Connection, text: str) -> str:
    key = content_hash(text)
    row = {"hash": key, "text": text}
    if conn.dialect.name == "sqlite":
        # SQLite runs one write at a time: nothing can delete the row before we commit.
        if conn.execute(_ADD_TEXT_SQLITE, row).rowcount:
            index_text(conn, key, text)
        return key
    # PostgreSQL: another transaction may be inserting the same text, or deleting it as
    # its last chat goes. Insert if absent: a row this transaction inserted is seen by no
    # other until commit, so none can delete it. A row found instead is held with a
    # key-share lock until commit so no delete can take it away under our messages; one
    # deleted while we waited for that lock is simply inserted again.
    for _ in range(5):
        if add_indexed_text(conn, key, text):  # new here (and indexed with it)
            return key
        if conn.execute(_HOLD_TEXT, {"hash": key}).first() is not None:
            return key
    raise TavernaError(
        "a message text kept being deleted while it was stored; try again",
        code="message_text_deleted_while_stored",
    )


def _drop_unused_texts(conn: Connection, hashes: Iterable[str]) -> int:
    """Delete those of these texts that no message and no chat's history uses any more;
    how many went. Two index lookups a text (`ix_nodes_content`, `history_texts`' key)."""
    candidates = sorted(set(hashes))
    dropped = 0
    for start in range(0, len(candidates), 500):
        chunk = candidates[start : start + 500]
        if conn.dialect.name != "sqlite":
            # PostgreSQL: lock the rows first, passing over those a writer holds (it is
            # storing a message with that text); the check below then runs on a fresh
            # snapshot and sees every writer that committed before the lock.
            locked = (
                sa.select(t.contents.c.hash)
                .where(t.contents.c.hash.in_(chunk))
                .with_for_update(skip_locked=True)
            )
            chunk = sorted(conn.execute(locked).scalars())
            if not chunk:
                continue
        # Each text probes each index once (EXISTS): a text a thousand messages share
        # costs what any other does.
        text = t.contents.c.hash
        unused = list(
            conn.execute(
                sa.select(text).where(
                    text.in_(chunk),
                    ~sa.exists().where(t.nodes.c.content_hash == text),
                    ~sa.exists().where(t.history_texts.c.hash == text),
                )
            ).scalars()
        )
        if unused:
            unindex_texts(conn, unused)
            conn.execute(t.contents.delete().where(t.contents.c.hash.in_(unused)))
            dropped += len(unused)
    return dropped
