"""`taverna inspect` and `taverna convert`: look into SillyTavern files and rewrite them.

Only typer is imported up front; each command imports the readers it uses when it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from taverna.cli.main import app
from taverna.cli.notices import echo_warnings, printable
from taverna.errors import FormatError

if TYPE_CHECKING:
    from taverna.formats.detect import DetectedFile

MAX_INPUT_BYTES = 512 * 1024 * 1024


def read_file(path: Path) -> DetectedFile:
    """A file from disk, read as whatever kind it is."""
    from taverna.formats.detect import read_any

    name = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_INPUT_BYTES:
            raise FormatError(f"file is {size:,} bytes, more than {MAX_INPUT_BYTES:,}", file=name)
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(f"cannot read the file: {exc.strerror or exc}", file=name) from None
    return read_any(data, name)


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
    from taverna.cli.summary import as_json, summary
    from taverna.formats import json_text

    document = read_file(file)
    if as_json_flag:
        typer.echo(json_text.dumps(as_json(document), indent=2))
        echo_warnings(document.warnings)
        return
    rows = summary(document, file.stat().st_size)
    if document.warnings:
        rows.append(("warnings", f"{len(document.warnings)} values read otherwise than written"))
    width = max(len(label) for label, _ in rows)
    for label, text in rows:
        typer.echo(f"{label.rjust(width)}  {printable(text)}")
    echo_warnings(document.warnings)


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
