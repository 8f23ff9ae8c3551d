"""What every request can reach: the store and the services, built once per server."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from fastapi import Depends, Request

from taverna.server.config import ProxyNetwork, ServerConfig, proxy_network
from taverna.services.connections.local_models import local_models
from taverna.services.connections.outbound_rules import OutboundPolicy
from taverna.services.connections.service import ConnectionService
from taverna.services.house.workspace import Workspace, open_workspace
from taverna.services.library.service import LibraryService

T = TypeVar("T")


@dataclass
class AppContext(Workspace):
    """The services of one running server, over one store in one data folder."""

    services: dict[str, Any] = field(default_factory=dict)
    # Largest request body read (JSON and anything else that is not an upload).
    body_limit: int = 16 * 1024 * 1024
    # Largest accepted upload (a card with a big picture, a preset, a lorebook).
    upload_limit: int = 32 * 1024 * 1024
    # Largest accepted SillyTavern data folder upload, all files together, and its files.
    folder_upload_limit: int = 1024 * 1024 * 1024
    folder_files: int = 100_000
    # Host names the server answers to (None: any). `taverna serve` allows the loopback
    # names and those the operator named: a page on another site cannot reach the server
    # by DNS rebinding.
    allowed_hosts: frozenset[str] | None = None
    # The reverse proxies whose forwarded headers name the client (none: the peer is).
    trusted_proxies: tuple[ProxyNetwork, ...] = ()
    # Environment variables a connection made through the API may take its key from.
    key_env_allowed: frozenset[str] = frozenset()
    # The thread that parses and stores uploads and imports, so the event loop keeps
    # answering every other request meanwhile. One thread: work handed to it runs in
    # order, and two big uploads never hold their memory at once.
    worker: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(max_workers=1, thread_name_prefix="library")
    )

    def __post_init__(self) -> None:
        self.services.setdefault("generation", self.generation)
        self.services.setdefault("connections", self.connections)
        if self.outbound is not None:
            # the policy holds with accounts, which a server turns on after it is made
            self.outbound.accounts_on = lambda: "accounts" in self.services
        # With accounts, a local model is named by its file in the models folder, never by
        # a path (no answer may tell which paths exist on the server).
        local_models().paths_allowed = lambda: "accounts" not in self.services

    def configure(self, config: ServerConfig) -> None:
        """Take the operator's limits (the regex time of a turn among them) and allowed
        key variables (host names are the command's to set, with its own)."""
        self.body_limit = config.limits.body
        self.upload_limit = config.limits.upload
        self.folder_upload_limit = config.limits.folder_upload
        self.folder_files = config.limits.folder_files
        self.key_env_allowed = frozenset(config.key_env)
        if self.outbound is not None:
            self.outbound.policy = OutboundPolicy.of(config.outbound_allow)
        self.trusted_proxies = tuple(proxy_network(proxy) for proxy in config.trusted_proxies)
        if self.turns is not None:
            self.turns.regex_budget = config.limits.regex_turn_seconds

    def connections_of(
        self, owner: str, *, key_env_allowed: Collection[str] | None = None
    ) -> ConnectionService:
        """An account's connections, as the API may change them: a key only from the
        environment variables the operator allowed (or those `key_env_allowed` names)."""
        allowed = self.key_env_allowed if key_env_allowed is None else key_env_allowed
        return super().connections_of(owner, key_env_allowed=allowed)

    async def off_loop(self, work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run parsing or storing work on the worker thread and wait for it."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.worker, functools.partial(work, *args, **kwargs))

    def close(self) -> None:
        self.worker.shutdown(wait=True)
        super().close()


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


def open_context(
    data_dir: Path, config: ServerConfig | None = None, *, redis_url: str | None = None
) -> AppContext:
    """The server's context over the data folder's workspace (see `open_workspace`),
    with the operator's `config` (default: the defaults); `redis_url`: the Redis the
    server processes share their generations through."""
    ws = open_workspace(data_dir, redis_url=redis_url)
    ctx = AppContext(**{f.name: getattr(ws, f.name) for f in fields(Workspace) if f.init})
    ctx.configure(config or ServerConfig())
    return ctx
