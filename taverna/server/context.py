"""What every request can reach: the store and the services, built once per server."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import Request

from taverna.services.chats import ChatService
from taverna.store.repository import Store


@dataclass
class AppContext:
    """The services of one running server, over one store in one data folder."""

    data_dir: Path
    store: Store
    chats: ChatService
    services: dict[str, Any] = field(default_factory=dict)
    # Largest accepted upload (a card with a big picture, a preset, a lorebook).
    upload_limit: int = 32 * 1024 * 1024
    # Largest accepted SillyTavern data folder upload, all files together.
    folder_upload_limit: int = 4 * 1024 * 1024 * 1024
    # Host names the server answers to (None: any). A server on the loopback address
    # answers only to loopback names, which keeps DNS-rebinding pages out.
    allowed_hosts: frozenset[str] | None = None

    def close(self) -> None:
        self.store.close()


def context(request: Request) -> AppContext:
    """The AppContext of the app that is serving `request`."""
    ctx: AppContext = request.app.state.context
    return ctx


def current_user(request: Request) -> str:
    """The id of the account making the request ("" in single-user mode on 127.0.0.1)."""
    return str(getattr(request.state, "user", ""))


def open_context(data_dir: Path) -> AppContext:
    """Open the data folder's store (SQLite, migrated, unless $TAVERNA_DATABASE_URL names
    another database) and build the services over it."""
    from taverna.server.prompting import library_prompt_builder
    from taverna.services.connections import ConnectionService
    from taverna.services.data import open_data
    from taverna.services.generation import GenerationService

    folder = open_data(data_dir)
    store = folder.store
    chats = ChatService(store)
    connections = ConnectionService(store, folder.path)
    generation = GenerationService(store, connections, library_prompt_builder(store), chats=chats)
    return AppContext(
        data_dir=folder.path,
        store=store,
        chats=chats,
        services={"generation": generation, "connections": connections},
    )


SAMPLES = ("Ione Calder.png", "Brasswater.json")


def seed_samples(ctx: AppContext) -> list[str]:
    """On an empty library, store the product's own sample character and lorebook."""
    from importlib.resources import files

    from taverna.services.library import LibraryKind, LibraryService

    library = LibraryService(ctx.store)
    if library.documents(LibraryKind.CHARACTER) or library.documents(LibraryKind.LOREBOOK):
        return []
    stored = []
    for name in SAMPLES:
        data = (files("taverna") / "data" / name).read_bytes()
        stored.append(library.import_bytes(data, name).name)
    return stored
