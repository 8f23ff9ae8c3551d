"""The `taverna` command: each area registers its sub-commands here."""

from __future__ import annotations

import importlib
import sys

import typer

from taverna.errors import TavernaError

app = typer.Typer(
    name="taverna",
    help="A role-play frontend for language-model APIs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

COMMAND_MODULES = (
    "taverna.cli.files",
    "taverna.cli.chats",
    "taverna.cli.prompt",
    "taverna.cli.connection",
    "taverna.cli.chat",
    "taverna.cli.serve",
)


@app.callback()
def _root() -> None:
    """A role-play frontend for language-model APIs."""


@app.command()
def version() -> None:
    """Print taverna's version."""
    from taverna import __version__

    typer.echo(__version__)


def _register() -> None:
    """Import the command modules; each adds its commands to `app`."""
    for name in COMMAND_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise


def main() -> None:
    """Entry point of the console script: one-line errors with exit code 2, never a traceback."""
    _register()
    try:
        app()
    except TavernaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
