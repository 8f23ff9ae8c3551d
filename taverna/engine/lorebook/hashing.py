"""The content hash that names an entry in SillyTavern's timer records (algo-world-info.md §1.6).

SillyTavern hashes `JSON.stringify({uid, world, ...other fields in file order,
decorators})` with the entry's content stripped of its decorator lines. Any edit to the
entry changes the hash and orphans its timers, which is what makes a record written by
SillyTavern recognisable here and the other way round.
"""

from __future__ import annotations

from typing import Any

from taverna.engine.macros.js import js_json
from taverna.engine.macros.seeded import string_hash
from taverna.model.lorebook import Entry, entry_to_json


def entry_hash(entry: Entry, book: str, decorators: tuple[str, ...], content: str) -> int:
    """SillyTavern's hash of `entry` as loaded from the book named `book`."""
    stored = entry_to_json(entry)
    scan: dict[str, Any] = {"uid": stored.get("uid", entry.uid), "world": book}
    for name, value in stored.items():
        if name != "uid":
            scan[name] = value
    scan["decorators"] = list(decorators)
    scan["content"] = content  # keeps its place if present, else goes last
    return string_hash(js_json(scan))
