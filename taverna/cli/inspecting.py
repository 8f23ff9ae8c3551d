"""What `taverna inspect` does, without the command-line framework.

`taverna inspect FILE` is run once per file by scripts, so the console script calls this
module directly for it (see `taverna.cli.entry`); the typer command calls it too.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

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


def inspect_file(path: Path, *, as_json: bool = False) -> None:
    """Print a few rows about the file (or the parsed document as JSON); warnings on stderr."""
    from taverna.cli.summary import as_json as document_json
    from taverna.cli.summary import summary
    from taverna.formats import json_text

    document = read_file(path)
    if as_json:
        print(json_text.dumps(document_json(document), indent=2))
        echo_warnings(document.warnings)
        return
    rows = summary(document, path.stat().st_size)
    if document.warnings:
        rows.append(("warnings", f"{len(document.warnings)} values read otherwise than written"))
    width = max(len(label) for label, _ in rows)
    for label, text in rows:
        print(f"{label.rjust(width)}  {printable(text)}")
    echo_warnings(document.warnings)
