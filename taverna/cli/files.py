"""`taverna inspect` and `taverna convert`: look into SillyTavern files and rewrite them.

Only typer is imported up front; each command imports the readers it uses when it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from taverna.cli.inspecting import inspect_file, read_file
from taverna.cli.main import app
from taverna.cli.notices import echo_warnings
from taverna.errors import FormatError


@app.command()
def inspect(
    file: Annotated[
        Path, typer.Argument(help="A SillyTavern file: card, lorebook, preset, chat, ...")
    ],
    as_json_flag: Annotated[
        bool, typer.Option("--json", help="Print the parsed document as JSON.")
    ] = False,
) -> None:
    """Show what a SillyTavern file holds (the kind is detected from its content).

    Values SillyTavern reads loosely (a number written as text, a null list) are read the
    same way; each is named on stderr as a warning.
    """
    inspect_file(file, as_json=as_json_flag)


@app.command()
def convert(
    source: Annotated[Path, typer.Argument(help="The file to convert.")],
    target: Annotated[
        Path,
        typer.Argument(
            help="Where to write; its extension picks the format (.png, .json, .charx)."
        ),
    ],
    spec: Annotated[
        str | None, typer.Option(help="Label a card as `v2` or `v3` (a V1 card is upgraded).")
    ] = None,
    book: Annotated[
        bool, typer.Option("--book", help="Write a card's embedded lorebook as a world info file.")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite TARGET if it exists.")] = False,
) -> None:
    """Write a file as another kind: PNG card <-> JSON card <-> CHARX, V1 -> V2 -> V3, card book -> world file.

    A file written as its own kind comes back byte for byte.
    """
    from taverna.cli.summary import size_text
    from taverna.formats.convert import convert as convert_document

    if target.exists() and not force:
        raise FormatError("already exists (use --force to overwrite)", file=str(target))
    document = read_file(source)
    converted = convert_document(document, target.suffix, spec=spec, book=book, target=str(target))
    try:
        target.write_bytes(converted.data)
    except OSError as exc:
        raise FormatError(f"cannot write: {exc.strerror or exc}", file=str(target)) from None
    typer.echo(f"wrote {target} ({size_text(len(converted.data))})")
    for note in converted.notes:
        typer.echo(f"note: {note}")
    echo_warnings(document.warnings)
