"""Opening a store: a SQLite or PostgreSQL engine, migrated to the newest schema."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Engine

from taverna.errors import TavernaError
from taverna.store.sql.rows import _utcnow
from taverna.store.sql.sqlite_engine import private_folder, sqlite_engine
from taverna.store.sql.store import SqlStore

DB_FILE = "taverna.db"
# The Alembic folder beside this package: taverna/store/migrations.
MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


_sqlite_engine = sqlite_engine  # the engine a store on a SQLite file uses


def _postgres_engine(url: str, schema: str | None) -> Engine:
    args: dict[str, Any] = {}
    if schema:
        if not schema.replace("_", "").isalnum():
            raise TavernaError(
                f"bad schema name {schema!r}",
                field="schema",
                code="bad_schema_name",
                params={"schema": str(schema)},
            )
        args["options"] = f"-c search_path={schema}"
        bootstrap = sa.create_engine(url)
        with bootstrap.begin() as conn:
            conn.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        bootstrap.dispose()
    from taverna.store.sql import postgres_text

    engine = sa.create_engine(
        url,
        connect_args=args,
        pool_pre_ping=True,
        json_serializer=postgres_text.dumps,
        json_deserializer=postgres_text.loads,
    )

    @sa.event.listens_for(engine, "connect")
    def _nul_safe(dbapi_connection: Any, _record: Any) -> None:
        postgres_text.install(dbapi_connection.adapters)

    return engine


def migrate(engine: Engine) -> None:
    """Bring the database schema to the newest migration (Alembic, run in-process)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            # Two processes opening a fresh database at once must not both create tables.
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(7305982146)")
        config.attributes["connection"] = conn
        command.upgrade(config, "head")


def open_store(
    target: str | Path,
    *,
    schema: str | None = None,
    durability: str = "full",
    clock: Callable[[], datetime] = _utcnow,
    vector_search: bool = True,
) -> SqlStore:
    """Open (and migrate) a store: a data folder or `.db` path for SQLite, or a database URL.

    `schema` places the tables in a PostgreSQL schema of that name (created if
    missing). `durability="normal"` lets SQLite skip the fsync on commit: still
    consistent after a crash of the process, but a power cut may lose the newest
    revisions. `vector_search=False` keeps recall off the database's own
    nearest-neighbour search (sqlite-vec, pgvector) where it has one: recall then
    searches in the process, exactly.
    """
    text = str(target)
    if "://" in text:
        if text.startswith("sqlite"):
            path = Path(sa.engine.make_url(text).database or DB_FILE)
            engine = _sqlite_engine(path, durability, vectors=vector_search)
        else:
            engine = _postgres_engine(text, schema)
        url = text
    else:
        path = Path(target)
        if path.suffix not in {".db", ".sqlite", ".sqlite3"}:
            private_folder(path)
            path = path / DB_FILE
        else:
            private_folder(path.parent)
        engine = _sqlite_engine(path, durability, vectors=vector_search)
        url = f"sqlite:///{path}"
    try:
        migrate(engine)
    except Exception:
        engine.dispose()
        raise
    store = SqlStore(engine, url=url, clock=clock, schema=schema)
    store.vector_search_off = not vector_search
    return store
