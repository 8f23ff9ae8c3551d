"""Deleting chats: gone from every read at once, their rows removed in short transactions.

A delete marks the chat (`chats.deleted`) in one small transaction: from then on it is in
no listing and every read or write of it is NotFound. Its rows are then removed a few
hundred at a time, each batch a transaction of its own that also removes the texts
nothing uses any more, so a delete of any size never holds the write lock for long and
other chats are written in between. The first batch runs in the delete itself (a small
chat is then gone whole when the delete returns); the rest runs on a background thread.
A crash between batches leaves a consistent store: what is left of the chat is still
marked, and `purge_in_background` (called when the product starts) finishes it.
"""

from __future__ import annotations

import logging
import threading

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from taverna.errors import NotFound
from taverna.store import schema as t
from taverna.store.repository import AccountRemoval
from taverna.store.sql.base import SqlBase, update_live_chat
from taverna.store.sql.contents import _drop_unused_texts
from taverna.store.sql.vector_index import SQLITE_VEC, forget

log = logging.getLogger(__name__)

# Rows removed per transaction: a few milliseconds of work, so a writer to another chat
# waits at most that long.
PURGE_BATCH = 500
# After a failed batch (the database away, say), the background purge tries again after
# this many seconds.
RETRY_AFTER = 5.0

# What a chat leaves, in the order it is removed: the history (and the texts it keeps),
# the records and pointers, then the messages (before them, nothing refers to them).
# Tables whose key starts with the chat are removed by ranges of that key, in its order:
_RANGED: dict[sa.Table, tuple[str, ...]] = {
    t.history_texts: ("hash",),
    t.changes: ("revision", "seq"),
    t.revisions: ("number",),
    t.selections: ("parent_id",),
}
# the others by their own key, found through their index on the chat.
_KEYED: dict[sa.Table, str] = {
    t.sent_prompts: "node_id",
    t.message_vectors: "seq",
    t.checkpoints: "id",
    t.branches: "id",
    t.nodes: "id",
}
_ORDER = (
    t.history_texts,
    t.sent_prompts,
    t.message_vectors,
    t.changes,
    t.revisions,
    t.checkpoints,
    t.branches,
    t.selections,
    t.nodes,
)


def _remove_rows(
    conn: Connection, table: sa.Table, chat_id: str, limit: int
) -> tuple[int, set[str]]:
    """Remove up to `limit` rows of one chat from one table, each statement on an index
    (never a look at the chat's other rows); how many, and the texts they named."""
    mine = table.c.chat_id == chat_id
    if table in _RANGED:
        key = [table.c[name] for name in _RANGED[table]]
        # The last row of this batch, in key order; none: fewer rows are left.
        last = conn.execute(
            sa.select(*key).where(mine).order_by(*key).offset(limit - 1).limit(1)
        ).first()
        texts: set[str] = set()
        if last is None:
            done = conn.execute(table.delete().where(mine).returning(key[0]))
            gone = list(done.scalars())
            if table is t.history_texts:
                texts.update(gone)
            return len(gone), texts
        if len(key) == 2:  # (revision, seq): the revisions before the last, then its part
            early = conn.execute(table.delete().where(mine, key[0] < last[0])).rowcount
            late = conn.execute(
                table.delete().where(mine, key[0] == last[0], key[1] <= last[1])
            ).rowcount
            return early + late, texts
        done = conn.execute(table.delete().where(mine, key[0] <= last[0]).returning(key[0]))
        gone = list(done.scalars())
        if table is t.history_texts:
            texts.update(gone)
        return len(gone), texts
    key_column = table.c[_KEYED[table]]
    keys = list(conn.execute(sa.select(key_column).where(mine).limit(limit)).scalars())
    if not keys:
        return 0, set()
    # By the listed keys alone: as a subquery, or with the chat named again, either
    # database may walk the whole table or the chat's index for every batch.
    statement = table.delete().where(key_column.in_(keys))
    if table is t.nodes:
        return len(keys), set(conn.execute(statement.returning(t.nodes.c.content_hash)).scalars())
    conn.execute(statement)
    if table is t.message_vectors and conn.dialect.name == "sqlite":
        forget_indexed(conn, keys)
    return len(keys), set()


def forget_indexed(conn: Connection, seqs: list[int]) -> None:
    """Purged vectors leave sqlite-vec's tables too (where the extension is loaded)."""
    try:
        with conn.begin_nested():
            forget(conn, SQLITE_VEC, seqs)
    except sa.exc.DBAPIError:
        pass  # no sqlite-vec in this process: the search's join skips what is left


def _remove_some(conn: Connection, chat_id: str, budget: int) -> tuple[int, set[str]]:
    """Remove up to `budget` rows of a chat, table after table; the rows removed and the
    texts they named (to check whether anything else still uses them)."""
    removed = 0
    texts: set[str] = set()
    for table in _ORDER:
        if removed >= budget:
            break
        count, named = _remove_rows(conn, table, chat_id, budget - removed)
        removed += count
        texts |= named
    return removed, texts


class SqlDeletion(SqlBase):
    """Deleting chats, and removing what they leave in the background."""

    purge_batch: int = PURGE_BATCH  # rows a purge transaction removes at most
    _purger: threading.Thread | None = None
    _wake: threading.Event
    _stop: threading.Event

    def delete_chat(self, chat_id: str, *, revision: int) -> None:
        with self.engine.begin() as conn:
            update_live_chat(conn, chat_id, revision, {"deleted": True})
        # The first batch now: a chat of a few hundred rows is then gone whole.
        try:
            whole = self.purge_step(chat_id)
        except Exception:  # the delete is done; removing its rows is housekeeping
            log.exception("could not remove the first rows of deleted chat %s", chat_id)
            whole = False
        if not whole:
            self.purge_in_background()

    def delete_account(self, id: str) -> AccountRemoval:
        """Remove the account, its sessions and counts, its documents; mark its chats
        deleted (their rows go batch by batch on the purge thread, as a deleted chat's)."""
        chats, docs = t.chats, t.documents
        with self.engine.begin() as conn:
            conn.execute(t.sessions.delete().where(t.sessions.c.user_id == id))
            conn.execute(t.generation_log.delete().where(t.generation_log.c.user_id == id))
            # Marked now (gone from every read), their rows removed by the purge.
            marked = conn.execute(
                chats.update()
                .where(chats.c.owner == id, chats.c.deleted == sa.false())
                .values(deleted=True)
            ).rowcount
            documents = conn.execute(docs.delete().where(docs.c.owner == id)).rowcount
            gone = conn.execute(t.users.delete().where(t.users.c.id == id))
            if gone.rowcount == 0:  # nothing above is kept
                raise NotFound(
                    f"no account {id!r}", field="id", code="no_account_id", params={"id": str(id)}
                )
        self._documents_changed()
        self.purge_in_background()
        return AccountRemoval(chats=int(marked or 0), documents=int(documents or 0))

    def purge_step(self, chat_id: str, *, batch: int | None = None) -> bool:
        """Remove up to `batch` (default `purge_batch`) rows of a deleted chat, and the
        texts only they used, in one transaction; True once nothing of the chat is left."""
        # Relaxed durability: a batch a power cut undoes is done again on the next start.
        with self.engine.connect().execution_options(taverna_relaxed=True) as conn, conn.begin():
            if conn.dialect.name == "postgresql":
                conn.exec_driver_sql("SET LOCAL synchronous_commit = off")
            # Purges of one chat take turns (PostgreSQL: several threads or processes).
            marked = conn.execute(
                sa.select(t.chats.c.id)
                .where(t.chats.c.id == chat_id, t.chats.c.deleted == sa.true())
                .with_for_update()
            ).first()
            if marked is None:
                return True
            batch = batch or self.purge_batch
            removed, texts = _remove_some(conn, chat_id, batch)
            _drop_unused_texts(conn, texts)
            if removed < batch:  # every part is empty: the chat's own row goes last
                conn.execute(t.chats.delete().where(t.chats.c.id == chat_id))
                return True
            return False

    def deleted_chats(self) -> list[str]:
        """Chats deleted whose rows are not all removed yet."""
        with self._read() as conn:
            return list(
                conn.execute(sa.select(t.chats.c.id).where(t.chats.c.deleted == sa.true()))
                .scalars()
                .all()
            )

    def purge_deleted(
        self, *, batch: int | None = None, stop: threading.Event | None = None
    ) -> int:
        """Remove everything deleted chats left, batch after batch (each a transaction);
        how many chats were finished. Stops between batches once `stop` is set."""
        finished = 0
        for chat_id in self.deleted_chats():
            while not (stop is not None and stop.is_set()):
                if self.purge_step(chat_id, batch=batch):
                    finished += 1
                    break
        return finished

    def purge_in_background(self) -> None:
        """Have a thread of this store remove what deleted chats left (started on first
        use, woken by each delete; `close` stops it between two batches)."""
        if self._purger is None and not self.deleted_chats():
            return
        if self._purger is None:
            self._wake, self._stop = threading.Event(), threading.Event()
            self._purger = threading.Thread(
                target=self._purge_loop, name="taverna-purge", daemon=True
            )
            self._purger.start()
        self._wake.set()

    def _purge_loop(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            try:
                self.purge_deleted(stop=self._stop)
            except Exception:
                # Left marked: the next attempt (or the next start) finishes it.
                log.exception("could not remove a deleted chat's rows; trying again later")
                self._stop.wait(RETRY_AFTER)
                continue
            self._wake.wait()

    def close(self) -> None:
        if self._purger is not None:
            self._stop.set()
            self._wake.set()
            self._purger.join()
            self._purger = None
        super().close()
