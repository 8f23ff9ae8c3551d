"""JavaScript value rules as STscript shows them: numbers, booleans, JSON text."""

from __future__ import annotations

import json
import math
from typing import Any

from taverna.engine.macros.js import js_json, js_number, js_text

_TRUE = frozenset({"on", "true", "1"})
_FALSE = frozenset({"off", "false", "0"})


def is_true(value: object) -> bool:
    """SillyTavern's `isTrueBoolean`: on / true / 1."""
    return isinstance(value, str) and value.strip().lower() in _TRUE


def is_false(value: object) -> bool:
    """SillyTavern's `isFalseBoolean`: off / false / 0."""
    return isinstance(value, str) and value.strip().lower() in _FALSE


def read_number(value: object) -> str | float:
    """A stored value as a read gives it: a number where `Number()` reads one, else text.

    Blank text stays as it is, a missing value is `''`.
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return float(value)
    text = value if isinstance(value, str) else js_text(value)
    if not text.strip():
        return text
    number = js_number(text)
    return text if number is None else number


def js_value_text(value: Any) -> str:
    """`String(value)` for what a command returns (objects as JSON, as the pipe does)."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, float) and math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, dict | list):
        return js_json(value)
    return js_text(value)


def convert_value(value: str, as_type: str | None) -> Any:
    """`as=type` of `/setvar` and `/var` with an index (SillyTavern's `convertValueType`)."""
    if as_type is None:
        return value
    kind = as_type.strip().lower()
    if kind in ("string", "str"):
        return value
    if kind == "null":
        return None
    if kind in ("number", "float"):
        number = js_number(value)
        return None if number is None else _plain(number)
    if kind == "int":
        digits = value.strip()
        sign = -1 if digits.startswith("-") else 1
        digits = digits.lstrip("+-")
        prefix = ""
        for char in digits:
            if not char.isdigit():
                break
            prefix += char
        return sign * int(prefix) if prefix else None
    if kind in ("boolean", "bool"):
        return is_true(value)
    if kind in ("list", "array"):
        parsed = _json(value)
        return parsed if isinstance(parsed, list) else []
    if kind in ("object", "dict", "dictionary"):
        parsed = _json(value)
        return parsed if isinstance(parsed, dict | list) else {}
    return value


def _plain(number: float) -> int | float:
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def parse_json(text: str) -> Any:
    """`JSON.parse`, or None where it would throw."""
    return _json(text)


def number_text(number: float) -> str:
    """A number as JavaScript prints it (`5`, `2.5`, `NaN`)."""
    return js_value_text(number)
