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


def read_bytes(path: Path) -> bytes:
    """A file's bytes; FormatError when it cannot be read or is too large."""
    name = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_INPUT_BYTES:
            raise FormatError(f"file is {size:,} bytes, more than {MAX_INPUT_BYTES:,}", file=name)
        return path.read_bytes()
    except OSError as exc:
        raise FormatError(f"cannot read the file: {exc.strerror or exc}", file=name) from None


def read_file(path: Path) -> DetectedFile:
    """A file from disk, read as whatever kind it is."""
    from taverna.formats.detect import read_any

    return read_any(read_bytes(path), str(path))


def inspect_file(path: Path, *, as_json: bool = False) -> None:
    """Print a few rows about the file (or the parsed document as JSON); warnings on stderr.

    A card is read without its models when that gives the same document (it is faster,
    formats/quick_read.py); anything else by the reader of its kind.
    """
    from taverna.formats.detect import read_any
    from taverna.formats.quick_read import quick_read

    data = read_bytes(path)
    document = quick_read(data, str(path)) or read_any(data, str(path))
    print(report(document, path.stat().st_size, as_json=as_json), end="")
    echo_warnings(document.warnings)


def report(document: DetectedFile, size: int, *, as_json: bool = False) -> str:
    """What `inspect` prints on stdout about a document read from a file of `size` bytes."""
    from taverna.cli.summary import as_json as document_json
    from taverna.cli.summary import summary
    from taverna.formats import json_text

    if as_json:
        return json_text.dumps(document_json(document), indent=2) + "\n"
    rows = summary(document, size)
    if document.warnings:
        rows.append(("warnings", f"{len(document.warnings)} values read otherwise than written"))
    width = max(len(label) for label, _ in rows)
    return "".join(f"{label.rjust(width)}  {printable(text)}\n" for label, text in rows)
