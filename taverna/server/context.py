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
    """Open the store in `data_dir` (SQLite, migrated) and build the services over it."""
    from taverna.store.sql import open_store

    data_dir.mkdir(parents=True, exist_ok=True)
    store = open_store(data_dir)
    ctx = AppContext(data_dir=data_dir, store=store, chats=ChatService(store))
    return ctx
