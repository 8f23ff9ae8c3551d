"""Throw-away stores for test suites: SQLite in a folder, or PostgreSQL in a private schema.

`TAVERNA_TEST_DATABASE_URL` names the PostgreSQL database; each store gets a schema
of its own that is dropped afterwards, so parallel runs never collide.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from taverna.store.sql import SqlStore, open_store

DATABASE_URL_ENV = "TAVERNA_TEST_DATABASE_URL"


def backends() -> list[str]:
    """The databases to test on: SQLite always, PostgreSQL when its URL is set."""
    return ["sqlite", "postgresql"] if os.environ.get(DATABASE_URL_ENV) else ["sqlite"]


@contextmanager
def temporary_store(
    backend: str,
    folder: Path,
    *,
    vector_search: bool = True,
    url: str | None = None,
    durability: str = "normal",
) -> Iterator[SqlStore]:
    """A fresh, migrated, empty store that is removed afterwards (`vector_search=False`:
    one that never uses the database's own vector search). PostgreSQL's is `url`, else
    the one `TAVERNA_TEST_DATABASE_URL` names; `durability` is SQLite's (see open_store)."""
    if backend == "sqlite":
        store = open_store(folder / "data", durability=durability, vector_search=vector_search)
        try:
            yield store
        finally:
            store.close()
        return
    url = url or os.environ[DATABASE_URL_ENV]
    schema = f"t_{uuid.uuid4().hex[:16]}"
    store = open_store(url, schema=schema, vector_search=vector_search)
    try:
        yield store
    finally:
        store.close()
        engine = sa.create_engine(url)
        with engine.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        engine.dispose()


@contextmanager
def counting_statements(store: SqlStore) -> Iterator[list[str]]:
    """The SQL statements the store sends inside the block, as sent."""
    seen: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    sa.event.listen(store.engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", count)
