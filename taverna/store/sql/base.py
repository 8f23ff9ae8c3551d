"""What every part of the SQL store stands on: its engine, its clock, a read connection."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NoReturn

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from taverna.errors import NotFound, StaleRevision
from taverna.store import schema as t
from taverna.store.sql.rows import _utcnow

# Built once: a chat's row is read on every turn, and building a statement costs more
# than running it.
_CHAT_ROW = sa.select(t.chats).where(t.chats.c.id == sa.bindparam("chat_id"))
# Revisions are 32-bit integers in both databases: a number past them names no revision.
MAX_REVISION = 2**31 - 1


@dataclass(slots=True)
class _ReadSpan:
    """One thread's span of reads on one connection (`SqlBase.reading`), with the chat
    rows it read (a chat's row is read several times a turn; inside one span, once)."""

    engine: Engine
    conn: Connection
    thread: int
    chat_rows: dict[str, Mapping[Any, Any]] = field(default_factory=dict)


_SPAN: ContextVar[_ReadSpan | None] = ContextVar("taverna_read_span", default=None)


def _span_of(conn: Connection) -> _ReadSpan | None:
    span = _SPAN.get()
    return span if span is not None and span.conn is conn else None


def revision_in_range(revision: int) -> bool:
    """Whether a revision a caller names can be one the store holds and moves past (the
    next one must fit the column too, or PostgreSQL refuses the statement)."""
    return 0 <= revision < MAX_REVISION


def update_live_chat(
    conn: Connection, chat_id: str, revision: int, values: Mapping[str, Any], *, hint: str = ""
) -> None:
    """Set `values` on a live chat's row if it is at `revision`; otherwise NotFound (no
    such live chat) or StaleRevision naming the revision it is at (`hint` ends the text)."""
    changed = 0
    if revision_in_range(revision):
        changed = conn.execute(
            t.chats.update()
            .where(
                t.chats.c.id == chat_id,
                t.chats.c.revision == revision,
                t.chats.c.deleted == sa.false(),
            )
            .values(**values)
        ).rowcount
    if changed == 1:
        return
    refuse_write(conn, chat_id, revision, hint)


def refuse_if_moved(conn: Connection, chat_id: str, revision: int) -> None:
    """NotFound or StaleRevision if the chat is gone or no longer at `revision`."""
    current = conn.execute(
        sa.select(t.chats.c.revision).where(
            t.chats.c.id == chat_id, t.chats.c.deleted == sa.false()
        )
    ).scalar()
    if current != revision:
        refuse_write(conn, chat_id, revision, ": reload and retry")


def refuse_write(conn: Connection, chat_id: str, revision: int, hint: str) -> NoReturn:
    """NotFound (no such live chat) or StaleRevision naming the revision it is at."""
    current = conn.execute(
        sa.select(t.chats.c.revision).where(
            t.chats.c.id == chat_id, t.chats.c.deleted == sa.false()
        )
    ).scalar()
    if current is None:
        raise NotFound(
            f"no chat {chat_id}", field="chat_id", code="no_chat", params={"chat_id": str(chat_id)}
        )
    raise StaleRevision(
        f"the chat is at revision {current}, not {revision}{hint}",
        current_revision=current,
        expected=revision,
    )


class SqlBase:
    """The engine and clock the parts of `SqlStore` share."""

    def __init__(
        self,
        engine: Engine,
        *,
        url: str,
        clock: Callable[[], datetime] = _utcnow,
        schema: str | None = None,
    ) -> None:
        self.engine = engine
        self.url = url
        self.schema = schema  # the PostgreSQL schema the tables are in (None: the default)
        self.clock = clock
        self._document_listeners: list[Callable[[], None]] = []
        # Each chat's row as this process's last write of it left it (see `SqlChats.write`).
        self._written: dict[str, tuple[int, dict[str, Any]]] = {}
        self._written_lock = threading.Lock()

    def watch_documents(self, listener: Callable[[], None]) -> None:
        self._document_listeners.append(listener)

    def _documents_changed(self) -> None:
        """After a committed write of documents: tell who watches them."""
        for listener in self._document_listeners:
            listener()

    def close(self) -> None:
        self.engine.dispose()

    def _read(self) -> AbstractContextManager[Connection]:
        """A connection for reading only (SQLite: a deferred transaction, no write lock):
        inside `reading()` on its thread, the span's own."""
        span = _SPAN.get()
        if span is not None and span.engine is self.engine and span.thread == threading.get_ident():
            return nullcontext(span.conn)
        return self.engine.connect().execution_options(taverna_read=True)

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Reads on this thread share one connection and transaction until the end: each
        read otherwise checks a connection out of the pool and back (a rollback), which
        costs more than most of a turn's reads themselves."""
        span = _SPAN.get()
        if span is not None and span.thread == threading.get_ident():
            yield  # already inside a span
            return
        with self.engine.connect().execution_options(taverna_read=True) as conn:
            token = _SPAN.set(_ReadSpan(self.engine, conn, threading.get_ident()))
            try:
                yield
            finally:
                _SPAN.reset(token)

    @staticmethod
    def _chat_row(conn: Connection, chat_id: str) -> Mapping[Any, Any]:
        span = _span_of(conn)
        row = span.chat_rows.get(chat_id) if span is not None else None
        if row is None:
            row = conn.execute(_CHAT_ROW, {"chat_id": chat_id}).mappings().first()
            if span is not None and row is not None:
                span.chat_rows[chat_id] = row
        if row is None or row["deleted"]:
            raise NotFound(
                f"no chat {chat_id}",
                field="chat_id",
                code="no_chat",
                params={"chat_id": str(chat_id)},
            )
        return row
