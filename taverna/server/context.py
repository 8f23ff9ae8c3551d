"""What every request can reach: the store and the services, built once per server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from fastapi import Depends, Request

from taverna.services.library import LibraryService
from taverna.services.workspace import Workspace, open_workspace


@dataclass
class AppContext(Workspace):
    """The services of one running server, over one store in one data folder."""

    services: dict[str, Any] = field(default_factory=dict)
    # Largest accepted upload (a card with a big picture, a preset, a lorebook).
    upload_limit: int = 32 * 1024 * 1024
    # Largest accepted SillyTavern data folder upload, all files together.
    folder_upload_limit: int = 4 * 1024 * 1024 * 1024
    # Host names the server answers to (None: any). A server on the loopback address
    # answers only to loopback names, which keeps DNS-rebinding pages out.
    allowed_hosts: frozenset[str] | None = None

    def __post_init__(self) -> None:
        self.services.setdefault("generation", self.generation)
        self.services.setdefault("connections", self.connections)


# Route dependencies are `async def` where they do no I/O: FastAPI runs a plain `def`
# dependency on a worker thread, and each such hop costs a request milliseconds.


async def context(request: Request) -> AppContext:
    """The AppContext of the app that is serving `request`."""
    ctx: AppContext = request.app.state.context
    return ctx


async def backed_up(request: Request) -> AsyncIterator[None]:
    """A route dependency: after a write to a chat succeeded, its backup is written (throttled,
    off the event loop)."""
    yield
    chat_id = request.path_params.get("chat_id")
    if chat_id and request.method not in ("GET", "HEAD", "OPTIONS"):
        ctx: AppContext = request.app.state.context
        await asyncio.to_thread(ctx.chat_written, str(chat_id))


def current_user(request: Request) -> str:
    """The id of the account making the request ("" in single-user mode on 127.0.0.1)."""
    return str(getattr(request.state, "user", ""))


async def library(request: Request, ctx: AppContext = Depends(context)) -> LibraryService:
    """A route dependency: the library of the account making the request."""
    return ctx.library(current_user(request))


def open_context(data_dir: Path) -> AppContext:
    """The server's context over the data folder's workspace (see `open_workspace`)."""
    ws = open_workspace(data_dir)
    return AppContext(**{f.name: getattr(ws, f.name) for f in fields(Workspace) if f.init})
