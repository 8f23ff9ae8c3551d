"""SillyTavern's loose JSON values, read the way SillyTavern reads them.

SillyTavern is JavaScript and checks few types when it opens a file: an `order` stored as
the string "245" sorts as 245, `Number("")` is 0, a `null` field behaves as a missing one,
`null` where a list belongs is no items. Cards, lorebooks and presets made by other tools,
by hand or by older releases carry such values, and SillyTavern opens them. Each function
here reads one value as the JSON type its field has, by these rules:

- number: a numeric text is JavaScript's `Number(text)` ("245" -> 245, " 1e3 " -> 1000,
  "" -> 0); true and false are 1 and 0; null, or a text that is no finite number, is the
  field's default;
- text: a number or a boolean is its JavaScript text (1.5 -> "1.5"); null is the default;
- true/false: the texts "true"/"false" (any case), "1"/"0", "yes"/"no", "on"/"off" and ""
  by their meaning, any other text as JavaScript's truth (true); a number is false only
  when 0; null is the default;
- list of texts: null is no items, one text is a list of that one (an empty text: none),
  numbers and booleans in it are their text, nulls in it are left out;
- object: null is the default, an empty list is an empty object.

Each function returns the value read and a note saying what changed (None when the
value already had its field's type). A value no rule fits (an object where a text
belongs) raises `Unfit`: the reader refuses the file with a FormatError naming the field.
"""

from __future__ import annotations

import math
from typing import Any

from taverna.model.js_number import js_number_text, parse_js_number
from taverna.model.js_text import js_trim

_TRUE_WORDS = frozenset({"true", "1", "yes", "on"})
_FALSE_WORDS = frozenset({"false", "0", "no", "off", ""})
_MAX_SAFE = 2**53


class Said(str):
    """A note with a code and params, for a page to say it in its language (the text
    itself is the English)."""

    code: str
    params: dict[str, str | int]

    def __new__(cls, text: str, code: str = "", /, **params: str | int) -> Said:
        said = super().__new__(cls, text)
        said.code = code
        said.params = params
        return said


def neutral(value: Any) -> str:
    """A value as a note's param names it, in no language: JSON-like and short."""
    if isinstance(value, list):
        return "[…]" if value else "[]"
    if isinstance(value, dict):
        return "{…}" if value else "{}"
    return show(value)


class Unfit(ValueError):
    """No rule reads the value as its field's type: `code` and `params` say which, for a
    page to say it in its language (the English is the exception's text)."""

    def __init__(self, message: str, code: str, **params: str | int) -> None:
        super().__init__(message)
        self.code = code
        self.params = params


def js_truthy(value: Any) -> bool:
    """Whether JavaScript counts a JSON value as true (`!!value`)."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, int | float):
        return value != 0 and not (isinstance(value, float) and math.isnan(value))
    if isinstance(value, str):
        return value != ""
    return True  # every object and list, empty ones too


def as_js_value(number: float) -> int | float:
    """A float as the JSON number JavaScript would write: integral values as integers."""
    if number.is_integer() and abs(number) < _MAX_SAFE:
        return int(number)
    return number


def show(value: Any) -> str:
    """A value as a note names it: JSON-like and short."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return js_number_text(value)
    if isinstance(value, str):
        clipped = value if len(value) <= 40 else value[:37] + "..."
        return '"' + clipped.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "an empty list" if not value else "a list"
    if isinstance(value, dict):
        return "an empty object" if not value else "an object"
    return type(value).__name__


def _default_note(value: Any, default: Any, what: str = "") -> str:
    reason = f"{show(value)} is {what}: " if what else f"{show(value)} is "
    code = "not_a_number_read_as_default" if what else "read_as_default"
    text = f"{reason}read as {show(default)}, the default"
    return Said(text, code, value=neutral(value), default=neutral(default))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def as_number(value: Any, default: Any, *, integer: bool = False) -> tuple[Any, str | None]:
    """A number field's value (an integer field's when `integer`), and what was changed."""
    if _is_number(value):
        if not integer or isinstance(value, int):
            return value, None
        if value.is_integer():  # 4.0 and 4 are one JavaScript number
            return int(value), None
        if not math.isfinite(value):  # 1e999 in a file: no whole number to read
            raise Unfit(
                f"expected a whole number, got {show(value)}",
                "unfit_whole_number",
                value=show(value),
            )
        whole = math.trunc(value)
        return whole, Said(
            f"{show(value)} is read as the whole number {whole}",
            "read_as_whole_number",
            value=neutral(value),
            whole=whole,
        )
    if isinstance(value, bool):
        return int(value), Said(
            f"{show(value)} is read as {int(value)}",
            "read_as",
            value=neutral(value),
            read=int(value),
        )
    if value is None:
        return default, _default_note(value, default)
    if isinstance(value, str):
        number = parse_js_number(value)
        if number is None or math.isinf(number):
            return default, _default_note(value, default, "not a number")
        read = as_js_value(number)
        if integer and not isinstance(read, int):
            read = math.trunc(read)
            return read, Said(
                f"{show(value)} is read as the whole number {read}",
                "read_as_whole_number",
                value=neutral(value),
                whole=read,
            )
        return read, Said(
            f"the text {show(value)} is read as the number {show(read)}",
            "text_read_as_number",
            value=neutral(value),
            number=show(read),
        )
    raise Unfit(f"expected a number, got {show(value)}", "unfit_number", value=show(value))


def as_bool(value: Any, default: Any) -> tuple[Any, str | None]:
    """A true/false field's value, and what was changed."""
    if isinstance(value, bool):
        return value, None
    if value is None:
        return default, _default_note(value, default)
    if isinstance(value, str):
        word = js_trim(value).lower()
        if word in _TRUE_WORDS:
            return True, Said(
                f"the text {show(value)} is read as true", "text_read_as_true", value=neutral(value)
            )
        if word in _FALSE_WORDS:
            return False, Said(
                f"the text {show(value)} is read as false",
                "text_read_as_false",
                value=neutral(value),
            )
        return True, Said(
            f"the text {show(value)} is read as true, as JavaScript reads any text",
            "text_read_as_true_as_javascript",
            value=neutral(value),
        )
    if _is_number(value):
        truth = value != 0 and not (isinstance(value, float) and math.isnan(value))
        return truth, Said(
            f"{show(value)} is read as {show(truth)}",
            "read_as",
            value=neutral(value),
            read=show(truth),
        )
    raise Unfit(f"expected true or false, got {show(value)}", "unfit_bool", value=show(value))


def as_text(value: Any, default: Any) -> tuple[Any, str | None]:
    """A text field's value, and what was changed."""
    if isinstance(value, str):
        return value, None
    if value is None:
        return default, _default_note(value, default)
    if isinstance(value, bool | int | float):
        text = show(value)
        return text, Said(
            f"{show(value)} is read as the text {show(text)}",
            "read_as_text",
            value=neutral(value),
            text=show(text),
        )
    raise Unfit(f"expected a string, got {show(value)}", "unfit_text", value=show(value))


def as_texts(value: Any) -> tuple[list[str], str | None]:
    """A list-of-texts field's value, and what was changed."""
    if isinstance(value, list):
        if all(isinstance(item, str) for item in value):
            return value, None
        out: list[str] = []
        for index, item in enumerate(value):
            if isinstance(item, str):
                out.append(item)
            elif item is None:
                continue
            elif isinstance(item, bool | int | float):
                out.append(show(item))
            else:
                raise Unfit(
                    f"item {index} is {show(item)}, expected a string",
                    "unfit_text_item",
                    index=index,
                    value=show(item),
                )
        return out, Said(
            "items that were not text are read as text (nulls left out)", "items_read_as_text"
        )
    if value is None:
        return [], Said("null is read as an empty list", "null_read_as_empty_list")
    if isinstance(value, str):
        if not value:
            return [], Said(
                'the empty text "" is read as an empty list', "empty_text_read_as_empty_list"
            )
        return [value], Said("a single text is read as a list of one", "text_read_as_list_of_one")
    if isinstance(value, bool | int | float):
        return [show(value)], Said(
            f"{show(value)} is read as a list of one text",
            "read_as_list_of_one_text",
            value=neutral(value),
        )
    if isinstance(value, dict) and not value:
        return [], Said(
            "an empty object is read as an empty list", "empty_object_read_as_empty_list"
        )
    raise Unfit(f"expected a list of strings, got {show(value)}", "unfit_texts", value=show(value))


def as_numbers(value: Any, *, integer: bool = False) -> tuple[list[Any], str | None]:
    """A list-of-numbers field's value, and what was changed."""
    if isinstance(value, list):
        out: list[Any] = []
        changed = False
        for index, item in enumerate(value):
            if item is None:
                changed = True
                continue
            try:
                read, note = as_number(item, None, integer=integer)
            except Unfit:
                raise Unfit(
                    f"item {index} is {show(item)}, expected a number",
                    "unfit_number_item",
                    index=index,
                    value=show(item),
                ) from None
            if read is None:
                raise Unfit(
                    f"item {index} is {show(item)}, expected a number",
                    "unfit_number_item",
                    index=index,
                    value=show(item),
                )
            changed = changed or note is not None
            out.append(read)
        if not changed:
            return value, None
        return out, Said(
            "items that were not numbers are read as numbers (nulls left out)",
            "items_read_as_numbers",
        )
    if value is None:
        return [], Said("null is read as an empty list", "null_read_as_empty_list")
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        read, _ = as_number(value, None, integer=integer)
        if read is None:
            raise Unfit(
                f"expected a list of numbers, got {show(value)}", "unfit_numbers", value=show(value)
            )
        return [read], Said(
            f"{show(value)} is read as a list of one number",
            "read_as_list_of_one_number",
            value=neutral(value),
        )
    raise Unfit(
        f"expected a list of numbers, got {show(value)}", "unfit_numbers", value=show(value)
    )


def as_object(value: Any, default: Any) -> tuple[Any, str | None]:
    """An object field's value, and what was changed."""
    if isinstance(value, dict):
        return value, None
    if value is None:
        if default == {}:
            return default, Said("null is read as an empty object", "null_read_as_empty_object")
        return default, _default_note(value, default)
    if isinstance(value, list) and not value:
        return {}, Said(
            "an empty list is read as an empty object", "empty_list_read_as_empty_object"
        )
    raise Unfit(f"expected an object, got {show(value)}", "unfit_object", value=show(value))
