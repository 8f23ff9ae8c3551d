"""`/findentry` and `/getentryfield`: a script reading the library's lorebooks.

A field is named as SillyTavern's scripts name it (`key`, `comment`, `excludeRecursion`)
and read from taverna's entry under its own name (`exclude_recursion`).
"""

from __future__ import annotations

import re
from typing import Any

from taverna.engine.script import ScriptError
from taverna.model.lorebook import Entry
from taverna.services.library.service import LibraryKind, LibraryService


def find_entry(library: LibraryService, book: str, field: str, text: str) -> str:
    """The uid of the first entry of `book` whose `field` holds `text` (any case), or ""."""
    entries = _entries(library, book)
    wanted = text.strip().lower()
    for entry in entries:
        value = _entry_value(entry, field)
        values = value if isinstance(value, tuple | list) else (value,)
        if any(wanted in str(item).lower() for item in values if item is not None):
            return str(entry.uid)
    return ""


def entry_field(library: LibraryService, book: str, uid: str, field: str) -> str:
    """The `field` of entry `uid` of `book` as a script reads it ("" when there is none)."""
    for entry in _entries(library, book):
        if str(entry.uid) == uid.strip():
            value = _entry_value(entry, field)
            if isinstance(value, tuple | list):
                return ",".join(str(item) for item in value)
            if isinstance(value, bool):
                return "1" if value else "0"
            return "" if value is None else str(getattr(value, "value", value))
    return ""


def _entries(library: LibraryService, book: str) -> tuple[Entry, ...]:
    doc = library.find(LibraryKind.LOREBOOK, book)
    if doc is None:
        return ()  # SillyTavern 1.12.6: a book that does not exist has no entries
    return tuple(library.lorebook(doc.id).entries)


def _entry_value(entry: Entry, field: str) -> Any:
    name = re.sub(r"(?<!^)([A-Z])", r"_\1", field).lower()
    if name.startswith("_") or not hasattr(entry, name):
        raise ScriptError(
            f"lorebook entries have no field {field!r}",
            code="lorebook_entries_have_no_field",
            params={"field_name": str(field)},
        )
    return getattr(entry, name)
