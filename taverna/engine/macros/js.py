"""JavaScript value semantics that leak into SillyTavern's output.

Macros print numbers the way JavaScript does (`5`, not `5.0`), parse them the way
`Number()` does (`" 7 "`, `"0x10"`, `"1e3"`), and world info timers hash entries by
their `JSON.stringify` text. These helpers reproduce exactly those behaviours.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from taverna.model.js_number import js_number_text, parse_js_number


def js_number(value: Any) -> float | None:
    """`Number(value)` for strings and numbers; None where JavaScript gives NaN."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return None if isinstance(value, float) and math.isnan(value) else float(value)
    if value is None:
        return 0.0
    if not isinstance(value, str):
        return None
    return parse_js_number(value)


def js_text(value: Any) -> str:
    """`String(value)` for the values macros produce."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return js_number_text(value)
    if isinstance(value, list | tuple):
        return ",".join("" if item is None else js_text(item) for item in value)
    if isinstance(value, Mapping):
        return "[object Object]"
    return str(value)


def js_json(value: Any) -> str:
    """Compact `JSON.stringify(value)` with JavaScript's number formatting."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
            return "null"
        return js_number_text(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ",".join(js_json(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{js_json(str(k))}:{js_json(v)}" for k, v in value.items()) + "}"
    return json.dumps(str(value), ensure_ascii=False)
