"""The `taverna` command: each area registers its sub-commands here.

A command's module is imported only when that command runs (the store, the server and
the providers cost most of a second to import), so `taverna version` and `taverna
inspect` start at once. `--help` and an unknown command import them all.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

import typer

from taverna.errors import TavernaError

app = typer.Typer(
    name="taverna",
    help="A role-play frontend for language-model APIs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Each top-level command (or command group) and the module that defines it.
COMMANDS: dict[str, str] = {
    "inspect": "taverna.cli.files",
    "convert": "taverna.cli.files",
    "import": "taverna.cli.chats",
    "chats": "taverna.cli.chats",
    "backup": "taverna.cli.chats",
    "prompt": "taverna.cli.prompt",
    "connection": "taverna.cli.connection",
    "model": "taverna.cli.model",
    "chat": "taverna.cli.chat",
    "script": "taverna.cli.script",
    "plugins": "taverna.cli.plugins",
    "serve": "taverna.cli.serve",
    "user": "taverna.cli.users",
    "world-info": "taverna.cli.world_info",
}
COMMAND_MODULES = tuple(dict.fromkeys(COMMANDS.values()))


@app.callback()
def _root() -> None:
    """A role-play frontend for language-model APIs."""


@app.command()
def version() -> None:
    """Print taverna's version."""
    from taverna import __version__

    typer.echo(__version__)


def _wanted(argv: Sequence[str] | None) -> tuple[str, ...]:
    """The command modules a command line needs: its command's, or all of them."""
    if argv is None:
        return COMMAND_MODULES
    name = next((arg for arg in argv if not arg.startswith("-")), None)
    if name == "version":
        return ()
    if name in COMMANDS:
        return (COMMANDS[name],)
    return COMMAND_MODULES


def _register(argv: Sequence[str] | None = None) -> None:
    """Import the command modules `argv` needs (all without `argv`); each adds its
    commands to `app`."""
    for name in _wanted(argv):
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise


def main() -> None:
    """Entry point of the console script: one-line errors with exit code 2, never a traceback."""
    _register(sys.argv[1:])
    try:
        app()
    except TavernaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
