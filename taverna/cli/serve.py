"""`taverna serve`: run the web app on this machine."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from taverna.cli.main import app
from taverna.services.data import default_data_dir

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


@app.command()
def serve(
    host: str = typer.Option(DEFAULT_HOST, "--host", help="Address to listen on."),
    port: int = typer.Option(DEFAULT_PORT, "--port", help="Port to listen on."),
    data: Path | None = typer.Option(
        None, "--data", help="Data folder (default: $TAVERNA_DATA or the user's data directory)."
    ),
) -> None:
    """Start the web app (SQLite store in the data folder) and print its URL."""
    import uvicorn

    from taverna.server.app import create_app
    from taverna.server.context import open_context
    from taverna.services.workspace import seed_samples

    data_dir = (data or default_data_dir()).expanduser()
    ctx = open_context(data_dir)
    if host in LOOPBACK:
        ctx.allowed_hosts = LOOPBACK
    seeded = seed_samples(ctx.library())
    if seeded:
        typer.echo(f"new data folder: added the samples {', '.join(seeded)}")
    # The most recent chats' lorebooks and tokenizers are made ready before the server
    # answers, so the first turn after a start is as quick as the next.
    started = time.monotonic()
    prepared = ctx.warm_up()
    if prepared:
        typer.echo(f"prepared {len(prepared)} recent chat(s) in {time.monotonic() - started:.1f} s")
    application = create_app(ctx)
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    if ":" in shown:
        shown = f"[{shown}]"
    typer.echo(f"taverna is running at http://{shown}:{port}/  (data: {data_dir})", err=False)
    if host not in LOOPBACK:
        typer.echo(
            "warning: single-user mode has no login; anyone who can reach this address can use it",
            err=True,
        )
    uvicorn.run(application, host=host, port=port, log_level="warning", timeout_graceful_shutdown=3)
