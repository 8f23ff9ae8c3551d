"""Warnings about values read otherwise than written, printed where a person sees them."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable
from typing import Any

from taverna.errors import FormatWarning

PER_FILE = 20
"""Warnings printed for one file; the rest are counted (`--json` lists them all)."""

# Text from a file never reaches the terminal raw: control characters (escape sequences
# could rewrite the screen) are shown as escapes.
_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}


def printable(text: str) -> str:
    """`text` with its control characters shown as escapes."""
    return text.translate(_CONTROL)


def echo_warnings(warnings: Iterable[FormatWarning], *, per_file: int = PER_FILE) -> None:
    """Each warning on a line of its own on stderr, at most `per_file` for one file."""
    shown: Counter[str | None] = Counter()
    left: Counter[str | None] = Counter()
    for warning in warnings:
        if shown[warning.file] < per_file:
            shown[warning.file] += 1
            print(f"warning: {printable(str(warning))}", file=sys.stderr)
        else:
            left[warning.file] += 1
    for file, count in left.items():
        where = f"{printable(file)}: " if file else ""
        print(
            f"warning: {where}{count} more values read otherwise than written (--json lists them)",
            file=sys.stderr,
        )


def warnings_json(warnings: Iterable[FormatWarning]) -> list[dict[str, Any]]:
    """The warnings as JSON objects: `file`, `field`, `message`."""
    return [{"file": w.file, "field": w.field, "message": w.message} for w in warnings]
