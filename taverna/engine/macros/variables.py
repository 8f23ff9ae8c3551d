"""Chat and global variables as the variable macros see them (algo-chat-ops.md §7).

`Variables` is immutable: every write returns a new `Variables`, so evaluating a text
never changes the caller's state. Values are what SillyTavern stores in
`chat_metadata.variables` and its global settings: strings, or numbers after an
`{{addvar}}`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from taverna.engine.macros.js import js_json, js_number, js_text

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _empty() -> Mapping[str, Any]:
    return _EMPTY


@dataclass(frozen=True, slots=True)
class Variables:
    """The local (chat) and global variables at one point of a conversation."""

    local: Mapping[str, Any] = field(default_factory=_empty)
    global_: Mapping[str, Any] = field(default_factory=_empty)

    def scope(self, is_global: bool) -> Mapping[str, Any]:
        return self.global_ if is_global else self.local

    def with_value(self, name: str, value: Any, *, is_global: bool = False) -> Variables:
        """A copy with one variable set."""
        updated = dict(self.scope(is_global))
        updated[name] = value
        frozen = MappingProxyType(updated)
        if is_global:
            return Variables(local=self.local, global_=frozen)
        return Variables(local=frozen, global_=self.global_)


def read_variable(values: Mapping[str, Any], name: str) -> Any:
    """`getvar`: missing is `''`; a numeric value comes back as a number (as `Number()`)."""
    if name not in values:
        return ""
    value = values[name]
    if isinstance(value, str) and not value.strip():
        return value
    number = js_number(value)
    if number is None:
        return value if value else ""
    return number


def add_to_variable(
    variables: Variables, name: str, value: str, *, is_global: bool
) -> tuple[Variables, Any]:
    """`addvar`: push onto a JSON list, add numbers, or concatenate text.

    Returns the new variables and the new value (what `incvar`/`decvar` print).
    """
    current = read_variable(variables.scope(is_global), name) or 0
    if isinstance(current, str):
        try:
            parsed = json.loads(current)
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            parsed.append(value)
            return variables.with_value(name, js_json(parsed), is_global=is_global), parsed
    increment = js_number(value)
    current_number = js_number(current)
    if increment is None or current_number is None:
        text = js_text(current or "") + value
        return variables.with_value(name, text, is_global=is_global), text
    total = current_number + increment
    stored: int | float = int(total) if total.is_integer() and abs(total) < 2**53 else total
    return variables.with_value(name, stored, is_global=is_global), stored
