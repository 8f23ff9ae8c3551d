"""`taverna serve`: run the web app on this machine."""

from __future__ import annotations

import gc
import time
from pathlib import Path

import typer

from taverna.cli.main import app
from taverna.errors import TavernaError
from taverna.services.house.data import default_data_dir

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
    from taverna.server.config import host_names, is_loopback, load_config, proxy_network

    if not is_loopback(host) and not insecure and not accounts:
        raise TavernaError(
            f"refusing to listen on {host}: single-user mode has no login, so anyone who "
            "can reach that address could read and change everything here and use your "
            "model keys. Listen on 127.0.0.1 (the default), or give --insecure to accept that",
            field="--host",
        )
    data_dir = (data or default_data_dir()).expanduser()
    settings = load_config(config, data_dir)
    try:
        proxies = tuple(proxy_network(proxy) for proxy in trust_proxy or ())
    except ValueError as exc:
        raise TavernaError(str(exc), field="--trust-proxy") from None

    import uvicorn

    from taverna.server.app import create_app
    from taverna.server.context import open_context
    from taverna.services.connections.local_models import DEFAULT_MODEL_NAME, local_models
    from taverna.services.house.workspace import (
        release_freed_memory,
        seed_local_model,
        seed_presets,
        seed_samples,
    )

    ctx = open_context(data_dir, settings, redis_url=redis_url)
    if accounts:
        ctx.services["accounts"] = service = ctx.accounts()
        if not service.any():
            ctx.close()
            raise TavernaError(
                "no account yet: make the first admin with `taverna user add NAME --admin`",
                field="--accounts",
            )
    ctx.allowed_hosts = host_names(host, [*settings.allowed_hosts, *(allow_host or ())])
    ctx.trusted_proxies += proxies
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
    application = create_app(ctx)
    # The most recent chats' lorebooks and tokenizers are made ready before the server
    # answers, so the first turn after a start is as quick as the next.
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
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    if ":" in shown:
        shown = f"[{shown}]"
    typer.echo(f"taverna is running at http://{shown}:{port}/  (data: {data_dir})", err=False)
    if not is_loopback(host) and not accounts:
        names = ", ".join(sorted(ctx.allowed_hosts))
        typer.echo(
            "warning: --insecure: single-user mode has no login; anyone who can reach this "
            f"address can use it. It answers to the host names {names} (add more with "
            "--allow-host or allowed_hosts in server.toml).",
            err=True,
        )
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
