"""`taverna plugins`: the installed plugins and what each may touch."""

from __future__ import annotations

import json

import typer

from taverna.cli.main import app


@app.command("plugins")
def plugins(
    as_json: bool = typer.Option(False, "--json", help="print them as JSON"),
) -> None:
    """List the plugins installed under the `taverna` entry points, with their grants."""
    from taverna.services.plugins import Plugins

    found = Plugins()
    found.load_entry_points()
    infos = found.list()
    if as_json:
        typer.echo(json.dumps([i.to_json() for i in infos], ensure_ascii=False, indent=2))
        return
    if not infos:
        typer.echo("no plugins installed")
        return
    for info in infos:
        version = f" {info.version}" if info.version else ""
        typer.echo(f"{info.name}{version} ({info.module})")
        if info.description:
            typer.echo(f"  {info.description}")
        grants = ", ".join(sorted(g.value for g in info.grants)) or "none"
        typer.echo(f"  grants: {grants}")
        if info.hooks:
            typer.echo(f"  hooks: {', '.join(info.hooks)}")
        if info.error:
            typer.echo(f"  not loaded: {info.error}")
