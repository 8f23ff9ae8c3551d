"""A script's `/inject` prompts, kept in the chat's metadata in SillyTavern's shape.

`chat_metadata.script_injects` (formats-extensions.md §3) maps an injection's id to its
text, position, depth, role and whether lorebooks scan it, positions and roles by
SillyTavern's numbers; the engine reads them from there when it assembles a turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taverna.engine.assembly.injections import SCRIPT_INJECTS
from taverna.engine.script import Injection

_POSITIONS = {"none": -1, "after": 0, "chat": 1, "before": 2}
_ROLES = {"system": 0, "user": 1, "assistant": 2}


def stored_injections(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The injections a chat's metadata holds, as stored (a copy to change)."""
    found = metadata.get(SCRIPT_INJECTS)
    return dict(found) if isinstance(found, Mapping) else {}


def with_injection(stored: Mapping[str, Any], injection: Injection) -> dict[str, Any]:
    """The stored injections with `injection` set (or removed, when it has no text)."""
    if not injection.text:
        return without_injection(stored, injection.id)
    changed = dict(stored)
    changed[injection.id] = {
        "value": injection.text,
        "position": _POSITIONS[injection.position],
        "depth": injection.depth,
        "scan": injection.scan,
        "role": _ROLES[injection.role],
    }
    return changed


def without_injection(stored: Mapping[str, Any], injection_id: str | None) -> dict[str, Any]:
    """The stored injections less the one of `injection_id` (None: less all of them)."""
    if injection_id is None:
        return {}
    changed = dict(stored)
    changed.pop(injection_id, None)
    return changed


def read_injections(stored: Mapping[str, Any]) -> dict[str, Injection]:
    """The stored injections as the engine's records; an entry of another shape is passed over."""
    positions = {number: name for name, number in _POSITIONS.items()}
    roles = {number: name for name, number in _ROLES.items()}
    found: dict[str, Injection] = {}
    for key, item in stored.items():
        if not isinstance(item, Mapping):
            continue
        found[str(key)] = Injection(
            id=str(key),
            text=str(item.get("value", "")),
            position=positions.get(_int(item.get("position"), 0), "after"),
            depth=_int(item.get("depth"), 4),
            role=roles.get(_int(item.get("role"), 0), "system"),
            scan=item.get("scan") is True,
        )
    return found


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default
