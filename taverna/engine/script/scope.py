"""Scoped variables: `/let`, `/var`, `{{var::name}}` and closure parameters (algo-chat-ops.md §9.1).

Each running closure has a scope whose parent is the scope it runs in. `/let` declares
a name in the current scope; `/var` assigns to the nearest scope that declares it.
A scope also holds the pipe (the last command's result) and closure macros such as
`{{timesIndex}}`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from taverna.engine.script.errors import ScriptError
from taverna.engine.script.parser import ClosureNode
from taverna.engine.script.values import convert_value, js_value_text, read_number


@dataclass(eq=False, slots=True)
class ClosureValue:
    """A closure as a value: its text, and the scope it runs inside (its parent)."""

    node: ClosureNode
    parent: Scope | None
    provided: dict[str, ScriptValue] = field(default_factory=dict)

    def __str__(self) -> str:
        return "[Closure]"


ScriptValue = str | ClosureValue | None
# What reading a variable gives: a number where the text is numeric, as SillyTavern's
# `getVariable` returns `Number(value)`.
ReadValue = str | float | ClosureValue


class Scope:
    """The variables and the pipe of one running closure."""

    __slots__ = ("macros", "parent", "pipe_value", "variables")

    def __init__(self, parent: Scope | None = None) -> None:
        self.parent = parent
        self.variables: dict[str, ScriptValue] = {}
        self.macros: dict[str, str] = {}
        self.pipe_value: ScriptValue = None

    @property
    def pipe(self) -> ScriptValue:
        scope: Scope | None = self
        while scope is not None:
            if scope.pipe_value is not None:
                return scope.pipe_value
            scope = scope.parent
        return None

    @pipe.setter
    def pipe(self, value: ScriptValue) -> None:
        self.pipe_value = value

    def macro(self, name: str) -> str | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.macros:
                return scope.macros[name]
            scope = scope.parent
        return None

    def _owner(self, name: str) -> Scope | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.variables:
                return scope
            scope = scope.parent
        return None

    def exists(self, name: str) -> bool:
        return self._owner(name) is not None

    def let(self, name: str, value: ScriptValue = None) -> None:
        if name in self.variables:
            raise ScriptError(
                f'variable "{name}" already exists in this scope',
                code="variable_already_exists_in_this",
                params={"name": str(name)},
            )
        self.variables[name] = value

    def set(
        self, name: str, value: ScriptValue, index: str | None = None, as_type: str | None = None
    ) -> None:
        owner = self._owner(name)
        if owner is None:
            raise ScriptError(
                f'no such variable: "{name}" (declare it with /let)',
                code="no_such_variable_declare_it",
                params={"name": str(name)},
            )
        if index is None:
            owner.variables[name] = value
            return
        current = owner.variables[name]
        owner.variables[name] = set_at_index(
            current if isinstance(current, str) else None, index, value, as_type
        )

    def get(self, name: str, index: str | None = None) -> ReadValue:
        owner = self._owner(name)
        if owner is None:
            raise ScriptError(
                f'no such variable: "{name}" (declare it with /let)',
                code="no_such_variable_declare_it",
                params={"name": str(name)},
            )
        value = owner.variables[name]
        if index is not None:
            if isinstance(value, str) and _parse(value) is _INVALID:
                # Text that is not JSON is indexed as JavaScript indexes a string.
                number = read_number(index)
                if isinstance(number, float) and number.is_integer() and 0 <= number < len(value):
                    return value[int(number)]
                return ""
            return get_at_index(value if isinstance(value, str) else None, index)
        if isinstance(value, ClosureValue):
            return value
        return read_number(value)


_INVALID = object()


def _parse(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return _INVALID


def get_at_index(stored: str | None, index: str) -> str:
    """`getvar index=i`: the element of the stored JSON list or object ('' when absent);
    stored text that is not JSON comes back whole, as SillyTavern's read does."""
    if stored is None:
        return ""
    data = _parse(stored)
    if data is _INVALID:
        value = read_number(stored)
        return value if isinstance(value, str) else js_value_text(value)
    element: Any = None
    number = read_number(index)
    if isinstance(data, list):
        if isinstance(number, float) and number.is_integer() and 0 <= number < len(data):
            element = data[int(number)]
    elif isinstance(data, dict):
        element = data.get(index)
    if element is None:
        return ""
    if isinstance(element, dict | list):
        return json.dumps(element, ensure_ascii=False, separators=(",", ":"))
    return js_value_text(element)


def set_at_index(stored: str | None, index: str, value: ScriptValue, as_type: str | None) -> str:
    """`setvar index=i`: the stored JSON with one element set (a list or an object is made)."""
    data: Any = _parse(stored) if stored else None
    if data is _INVALID:
        # SillyTavern leaves such a variable unchanged without a word; say why instead.
        raise ScriptError(
            "index= needs a variable holding a JSON list or object, not text",
            code="index_needs_variable_holding_json",
        )
    item = convert_value(value if isinstance(value, str) else str(value or ""), as_type)
    number = read_number(index)
    if isinstance(number, float) and number.is_integer() and number >= 0:
        position = int(number)
        if position > 100_000:
            raise ScriptError(
                f"index {index} is too large",
                code="index_is_too_large",
                params={"index": str(index)},
            )
        if isinstance(data, dict):
            data[index] = item
        else:
            if not isinstance(data, list):
                data = []
            while len(data) <= position:
                data.append(None)
            data[position] = item
    else:
        if not isinstance(data, dict):
            data = {} if data is None or not isinstance(data, list) else data
        if isinstance(data, dict):
            data[index] = item
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
