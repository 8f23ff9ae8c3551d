"""`taverna script run TEXT [--chat ID]`: run an STscript from the shell.

In a chat its messages and chat variables are written to the chat (the variables on its
active leaf) and a reply it asks for (`/trigger`) is generated; without `--chat` only the
global variables and Quick Replies of the library are at hand. The script's result is
printed; its notices go to standard error.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from taverna.cli.main import app

script_app = typer.Typer(help="Run STscript (SillyTavern's slash-command language).")
app.add_typer(script_app, name="script")


@script_app.command("run")
def run(
    text: Annotated[str, typer.Argument(help="the script, e.g. '/setvar key=x 1 | /getvar x'")],
    chat_id: Annotated[
        str | None, typer.Option("--chat", help="run it in this chat (its id)")
    ] = None,
    connection: Annotated[
        str | None,
        typer.Option("--connection", help="the connection a reply it asks for uses"),
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option("--data", help="Data folder (default: $TAVERNA_DATA or the user's one)."),
    ] = None,
) -> None:
    """Run a script and print its result."""
    from taverna.services.house.data import resolve_data_dir
    from taverna.services.house.workspace import open_workspace
    from taverna.services.scripts.runner import ScriptService

    ctx = open_workspace(resolve_data_dir(data))
    session = None
    try:
        if chat_id is not None:
            from taverna.cli.chat import Session

            ctx.chats.get_chat(chat_id)  # a clear "not found" before anything runs
            session = Session(ctx, chat_id, connection, sys.stdout)
        ask = session.ask if session is not None else None
        outcome = ScriptService(ctx.chats).run(text, chat_id=chat_id, ask=ask)
        for severity, notice in outcome.notices:
            print(notice if severity == "info" else f"{severity}: {notice}", file=sys.stderr)
        if outcome.result.pipe:
            typer.echo(outcome.result.pipe)
        if chat_id is not None and outcome.changed:
            ctx.chat_written(chat_id)
        if outcome.follow_up is not None and session is not None:
            session.follow_up(outcome.follow_up)
        if outcome.result.aborted:
            print(f"aborted: {outcome.result.abort_reason}", file=sys.stderr)
            raise typer.Exit(1)
    finally:
        if session is not None:
            session.close()
        ctx.close()
