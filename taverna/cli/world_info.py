"""`taverna world-info show|set`: the World Info settings every chat's lorebook scan uses,
as the page's panel shows and changes them (SillyTavern's names and ranges)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from taverna.cli.chats import DataOption, _emit_json, _opened
from taverna.cli.main import app
from taverna.errors import FormatError
from taverna.services.library.lore_settings import (
    GLOBAL_SELECT,
    change_lore_settings,
    read_lore_settings,
)

world_app = typer.Typer(
    help="The World Info settings every chat's lorebook scan uses.", no_args_is_help=True
)
app.add_typer(world_app, name="world-info")


@world_app.command("show")
def show(data: Path | None = DataOption) -> None:
    """The settings in force, as JSON under SillyTavern's names."""
    with _opened(data) as folder:
        _emit_json(read_lore_settings(folder.library()))


def _value(key: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise FormatError(f"{key}: {text!r} is not a JSON value", field=key) from None


@world_app.command("set")
def set_settings(
    changes: list[str] = typer.Argument(
        None, help="KEY=VALUE, SillyTavern's names and JSON values: world_info_depth=4"
    ),
    books: list[str] = typer.Option(
        None, "--global", help="A lorebook active for every chat (repeat; replaces the list)."
    ),
    no_books: bool = typer.Option(False, "--no-global", help="No lorebook for every chat."),
    data: Path | None = DataOption,
) -> None:
    """Change some settings (the others keep their values); print them after."""
    body: dict[str, Any] = {}
    for change in changes or []:
        key, sep, text = change.partition("=")
        if not sep:
            raise FormatError(f"{change!r}: write KEY=VALUE", field=change)
        body[key.strip()] = _value(key.strip(), text)
    if books or no_books:
        body[GLOBAL_SELECT] = {"globalSelect": list(books or [])}
    with _opened(data) as folder:
        _emit_json(change_lore_settings(folder.library(), body))
