"""`taverna serve`: run the web app on this machine."""

from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from taverna.cli.main import app
from taverna.errors import TavernaError
from taverna.services.house.data import default_data_dir

if TYPE_CHECKING:
    from taverna.server.config import ProxyNetwork, ServerConfig
    from taverna.server.context import AppContext

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


@app.command()
def serve(
    host: str = typer.Option(DEFAULT_HOST, "--host", help="Address to listen on."),
    port: int = typer.Option(DEFAULT_PORT, "--port", help="Port to listen on."),
    data: Path | None = typer.Option(
        None, "--data", help="Data folder (default: $TAVERNA_DATA or the user's data directory)."
    ),
    insecure: bool = typer.Option(
        False,
        "--insecure",
        help=(
            "Listen on an address other than loopback although single-user mode has no "
            "login: anyone who reaches it can use everything."
        ),
    ),
    allow_host: list[str] | None = typer.Option(
        None,
        "--allow-host",
        help=(
            "A host name the server answers to besides the loopback ones (repeatable; "
            "also `allowed_hosts` in the config)."
        ),
    ),
    trust_proxy: list[str] | None = typer.Option(
        None,
        "--trust-proxy",
        help=(
            "The address (or network) of a reverse proxy in front of the server: its "
            "X-Forwarded-For / X-Real-IP headers name the client, for the login limits "
            "(repeatable; also `trusted_proxies` in the config; none by default)."
        ),
    ),
    config: Path | None = typer.Option(
        None, "--config", help="Server config file (default: server.toml in the data folder)."
    ),
    redis_url: str | None = typer.Option(
        None,
        "--redis",
        envvar="TAVERNA_REDIS_URL",
        help=(
            "Redis URL (redis://host:6379/0) the server processes of one deployment share "
            "their generations through, so any of them can follow, stop and replay a reply "
            "another started; with PostgreSQL ($TAVERNA_DATABASE_URL), run as many as needed."
        ),
    ),
    accounts: bool = typer.Option(
        False,
        "--accounts",
        help=(
            "Several people, each with an account (make the first admin with `taverna user "
            "add NAME --admin`): a login, and each sees only their own chats and library."
        ),
    ),
) -> None:
    """Start the web app (SQLite store in the data folder) and print its URL."""
    from taverna.server.config import host_names, is_loopback, load_config

    refuse_open_address(host, insecure=insecure, accounts=accounts)
    data_dir = (data or default_data_dir()).expanduser()
    settings = load_config(config, data_dir)
    proxies = _proxy_networks(trust_proxy or [])
    ctx = _open_context(data_dir, settings, redis_url, accounts=accounts)
    ctx.allowed_hosts = host_names(host, [*settings.allowed_hosts, *(allow_host or ())])
    ctx.trusted_proxies += proxies
    _seed(ctx, accounts=accounts)
    from taverna.server.app import create_app

    application = create_app(ctx)
    _prepare(ctx)
    typer.echo(f"taverna is running at {_url(host, port)}  (data: {data_dir})", err=False)
    if not is_loopback(host) and not accounts:
        _warn_insecure(ctx.allowed_hosts)
    _run(application, host, port)


def refuse_open_address(host: str, *, insecure: bool, accounts: bool) -> None:
    """Single-user mode has no login: it listens beyond this machine only when told to."""
    from taverna.server.config import is_loopback

    if not is_loopback(host) and not insecure and not accounts:
        raise TavernaError(
            f"refusing to listen on {host}: single-user mode has no login, so anyone who "
            "can reach that address could read and change everything here and use your "
            "model keys. Listen on 127.0.0.1 (the default), or give --insecure to accept that",
            field="--host",
        )


def _proxy_networks(proxies: list[str]) -> tuple[ProxyNetwork, ...]:
    from taverna.server.config import proxy_network

    try:
        return tuple(proxy_network(proxy) for proxy in proxies)
    except ValueError as exc:
        raise TavernaError(str(exc), field="--trust-proxy") from None


def _open_context(
    data_dir: Path, settings: ServerConfig, redis_url: str | None, *, accounts: bool
) -> AppContext:
    """The server's services over the data folder; with accounts, only once an admin exists."""
    from taverna.server.context import open_context

    ctx = open_context(data_dir, settings, redis_url=redis_url)
    if accounts:
        ctx.services["accounts"] = service = ctx.accounts()
        if not service.any():
            ctx.close()
            raise TavernaError(
                "no account yet: make the first admin with `taverna user add NAME --admin`",
                field="--accounts",
            )
    return ctx


def _seed(ctx: AppContext, *, accounts: bool) -> None:
    """A new data folder's presets, templates and samples (not with accounts: each person
    has a library of their own), and the small local model's connection."""
    from taverna.services.connections.local_models import DEFAULT_MODEL_NAME
    from taverna.services.house.workspace import seed_local_model, seed_presets, seed_samples

    # Presets first: they are seeded only into a library that has nothing yet.
    presets = [] if accounts else seed_presets(ctx.library())
    if presets:
        typer.echo(f"new data folder: added the presets and templates {', '.join(presets)}")
    seeded = [] if accounts else seed_samples(ctx.library())
    if seeded:
        typer.echo(f"new data folder: added the samples {', '.join(seeded)}")
    local = seed_local_model(ctx.connections)
    if local:
        typer.echo(
            f"added the connection {local!r}: {DEFAULT_MODEL_NAME}, a small model that runs on "
            "this machine (it starts with the first message). Connect a stronger model under "
            "Connections."
        )


def _prepare(ctx: AppContext) -> None:
    """The most recent chats' lorebooks and tokenizers are made ready before the server
    answers, so the first turn after a start is as quick as the next."""
    from taverna.services.house.workspace import release_freed_memory

    started = time.monotonic()
    prepared = ctx.warm_up()
    if prepared:
        typer.echo(f"prepared {len(prepared)} recent chat(s) in {time.monotonic() - started:.1f} s")
    # What the start made (the prepared books included) lives as long as the process:
    # left out of the garbage collector's full passes, which otherwise walk it all and
    # hold up every request while a big upload allocates (a 10,000-entry lorebook: 0.3 s
    # a pass, 0.05 s after). The start's garbage goes first, and its memory back.
    gc.collect()
    gc.freeze()
    release_freed_memory()


def _url(host: str, port: int) -> str:
    """The address to open in a browser (an address listening on all of them: this machine)."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    if ":" in shown:
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/"


def _warn_insecure(allowed_hosts: frozenset[str]) -> None:
    names = ", ".join(sorted(allowed_hosts))
    typer.echo(
        "warning: --insecure: single-user mode has no login; anyone who can reach this "
        f"address can use it. It answers to the host names {names} (add more with "
        "--allow-host or allowed_hosts in server.toml).",
        err=True,
    )


def _run(application: Any, host: str, port: int) -> None:
    """Serve until stopped; the local model's process stops with the server."""
    import uvicorn

    from taverna.services.connections.local_models import local_models

    try:
        # uvicorn's own reading of X-Forwarded-For is off: the client's address is
        # taken from the headers of the proxies the operator trusts, and no others
        # (taverna/server/client_address.py).
        uvicorn.run(
            application,
            host=host,
            port=port,
            log_level="warning",
            timeout_graceful_shutdown=3,
            proxy_headers=False,
        )
    finally:
        local_models().stop()
