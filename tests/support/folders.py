"""Data folders and stores set up for a test: the packaged card, the stub model as a connection,
a PostgreSQL schema of the test's own."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.resources import files
from pathlib import Path

import sqlalchemy as sa

from taverna.services.connections.service import ConnectionService
from taverna.services.house.data import open_data
from taverna.services.library.active_settings import set_active
from taverna.services.library.service import LibraryKind, LibraryService
from taverna.store import Store
from tests.stubs.model_server import StubServer

CARD = "Ione Calder.png"  # a card the package ships in taverna/data


def connect_stub(
    connections: ConnectionService, stub: StubServer, *, anthropic: bool = False
) -> ConnectionService:
    """Add the stub's OpenAI API as "stub" (the first connection, so the default) and, with
    `anthropic`, its Anthropic API as "claude"; both with the stub's key and `stub-model`."""
    connections.add("stub", "openai", url=stub.base_url("openai"), model="stub-model", key=stub.key)
    if anthropic:
        connections.add(
            "claude", "anthropic", url=stub.base_url("anthropic"), model="stub-model", key=stub.key
        )
    return connections


def card_folder(folder: Path, stub: StubServer) -> Path:
    """A data folder holding the packaged card and the stub as its connection "stub"."""
    with open_data(folder) as opened:
        LibraryService(opened.store).import_bytes(
            (files("taverna") / "data" / CARD).read_bytes(), CARD
        )
        connect_stub(ConnectionService(opened.store, opened.path), stub)
    return folder


def small_recall(store: Store, **vectors: object) -> None:
    """A small chat preset in use (400 tokens of context, 100 to reply) and recall on for
    chats, two messages inserted for one queried; `vectors` sets any of recall's settings."""
    preset = LibraryService(store).put(
        LibraryKind.CHAT_COMPLETION_PRESET,
        "Small",
        {"openai_max_context": 400, "openai_max_tokens": 100},
    )
    set_active(store, "chat_completion_preset", preset.id)
    set_active(
        store,
        "extension_settings",
        {"vectors": {"enabled_chats": True, "insert": 2, "query": 1, **vectors}},
    )


@contextmanager
def own_schema(url: str, prefix: str = "t_") -> Iterator[str]:
    """The database URL `url` with its tables in a new schema of their own (its search
    path), dropped afterwards."""
    schema = f"{prefix}{uuid.uuid4().hex[:16]}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    joiner = "&" if "?" in url else "?"
    try:
        yield f"{url}{joiner}options=-csearch_path%3D{schema}"
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        engine.dispose()
