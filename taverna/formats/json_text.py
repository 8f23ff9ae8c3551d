"""JSON text as SillyTavern reads and writes it: strict parsing, `JSON.stringify` output.

SillyTavern is JavaScript, so its files are what `JSON.stringify` produces: no `NaN`,
numbers in JavaScript's shortest form (`1`, not `1.0`; `0.00001`, not `1e-05`), non-ASCII
text unescaped, lone surrogates escaped. Writing the same way makes an untouched document
come back byte for byte.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, NamedTuple

from taverna.errors import FormatError, library_cause, raw_words
from taverna.model.js_number import js_number_text

MAX_JSON_BYTES = 64 * 1024 * 1024
"""Largest JSON document read (cards with embedded art can be tens of megabytes)."""

MAX_DEPTH = 200
"""Deepest nesting accepted; SillyTavern's own documents nest fewer than ten levels."""

MAX_TEXT_FIELD = 16 * 1024 * 1024
"""Longest string value accepted, in characters."""

_KEY = re.compile(rb'"((?:[^"\\\n]|\\.){1,80})"\s*:')

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_encode_string = json.encoder.encode_basestring


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def decode_text(data: bytes, *, file: str | None = None, field: str | None = None) -> str:
    """UTF-8 bytes as text; a leading byte-order mark is dropped."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(
            f"not valid UTF-8 text (byte {exc.start}: {exc.reason})",
            file=file,
            field=field,
            code="not_valid_utf_8_text",
            params={"start": str(exc.start), "reason": str(exc.reason), **library_cause(exc)},
        ) from None
    return text.removeprefix("\ufeff")


def loads(
    data: bytes | str,
    *,
    file: str | None = None,
    field: str | None = None,
    max_bytes: int = MAX_JSON_BYTES,
) -> Any:
    """Parse one JSON document; every failure is a FormatError naming `file` and `field`."""
    if len(data) > max_bytes:
        raise FormatError(
            f"document is {len(data):,} bytes, more than the {max_bytes:,} accepted",
            file=file,
            field=field or _largest_field(data),
            code="document_is_bytes_more_than",
            params={"n": format(len(data), ","), "max_bytes": format(max_bytes, ",")},
        )
    text = decode_text(data, file=file, field=field) if isinstance(data, bytes) else data
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise FormatError(
            f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
            file=file,
            field=field,
            code="invalid_json_at_line_column",
            params={
                "lineno": str(exc.lineno),
                "colno": str(exc.colno),
                "msg": str(exc.msg),
                **library_cause(exc),
            },
        ) from None
    except ValueError as exc:
        raise FormatError(
            f"invalid JSON: {exc}",
            file=file,
            field=field,
            code="invalid_json",
            params=raw_words(exc),
        ) from None
    except RecursionError:
        raise FormatError(
            "JSON nested too deeply", file=file, field=field, code="json_nested_too_deeply"
        ) from None
    check_depth(value, file=file, field=field)
    return value


def _largest_field(data: bytes | str) -> str | None:
    """The key followed by the most text: a good guess at what made a document too large."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    best: tuple[int, str | None] = (0, None)
    previous: tuple[int, bytes] | None = None
    for match in _KEY.finditer(raw):
        if previous is not None and match.start() - previous[0] > best[0]:
            best = (match.start() - previous[0], previous[1].decode("utf-8", "replace"))
        previous = (match.end(), match.group(1))
    if previous is not None and len(raw) - previous[0] > best[0]:
        best = (len(raw) - previous[0], previous[1].decode("utf-8", "replace"))
    return best[1]


def _path(parts: tuple[str | int, ...]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def check_depth(value: Any, *, file: str | None = None, field: str | None = None) -> None:
    """Refuse values nested deeper than MAX_DEPTH or strings longer than MAX_TEXT_FIELD.

    Walked without recursion. A fast pass finds whether anything is wrong; only then a
    second pass tracks paths, so that the error names the offending value.
    """
    if _within_limits(value):
        return
    prefix: tuple[str | int, ...] = (field,) if field else ()
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, prefix)]
    base = len(prefix)
    while stack:
        item, path = stack.pop()
        if len(path) - base >= MAX_DEPTH:
            raise FormatError(
                f"JSON nested deeper than {MAX_DEPTH} levels",
                file=file,
                field=_path(path),
                code="json_nested_deeper_than_levels",
                params={"max_depth": str(MAX_DEPTH)},
            )
        if isinstance(item, str):
            if len(item) > MAX_TEXT_FIELD:
                raise FormatError(
                    f"text is {len(item):,} characters, more than the {MAX_TEXT_FIELD:,} accepted",
                    file=file,
                    field=_path(path) or None,
                    code="text_is_characters_more_than",
                    params={
                        "n": format(len(item), ","),
                        "max_text_field": format(MAX_TEXT_FIELD, ","),
                    },
                )
        elif isinstance(item, dict):
            stack.extend((child, (*path, str(key))) for key, child in item.items())
        elif isinstance(item, list):
            stack.extend((child, (*path, index)) for index, child in enumerate(item))


def _within_limits(value: Any) -> bool:
    stack: list[tuple[Any, int]] = [(value, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        if type(item) is str:
            if len(item) > MAX_TEXT_FIELD:
                return False
            continue
        if depth >= MAX_DEPTH:
            return False
        children = item.values() if type(item) is dict else item if type(item) is list else ()
        for child in children:
            if type(child) is str:
                if len(child) > MAX_TEXT_FIELD:
                    return False
            elif type(child) is dict or type(child) is list:
                push((child, depth + 1))
    return True


def json_number(value: float) -> str:
    """A float as `JSON.stringify` writes it: `String(number)`, and `null` for NaN and Infinity."""
    return js_number_text(value) if math.isfinite(value) else "null"


def _string(text: str) -> str:
    encoded: str = _encode_string(text)
    if _LONE_SURROGATE.search(encoded):
        encoded = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", encoded)
    return encoded


def dumps(value: Any, *, indent: int | str | None = None) -> str:
    """`JSON.stringify(value, null, indent)`: compact when `indent` is None."""
    parts: list[str] = []
    _write(value, parts, " " * indent if isinstance(indent, int) else indent or None, 0)
    return "".join(parts)


class TextLayout(NamedTuple):
    """How a JSON file is laid out: indentation, line breaks, what follows the value (a
    final newline), a byte-order mark.

    Read from a file (`layout_of`) and used to write it back (`dump_as`), so that a file
    written by any tool in `JSON.stringify`'s form comes back byte for byte.
    """

    indent: str | None = "    "
    newline: str = "\n"
    end: str = ""
    bom: bool = False


SILLYTAVERN_LAYOUT = TextLayout()
"""What SillyTavern writes: 4-space indentation, `\\n`, no final newline."""

_FIRST_INDENT = re.compile(rb"[\[{]\r?\n([ \t]+)\S")


def layout_of(data: bytes | str) -> TextLayout:
    """The layout of a JSON text (compact when its first value opens without a line break)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    bom = raw.startswith(b"\xef\xbb\xbf")
    body = raw[3:] if bom else raw
    stripped = body.rstrip(b" \t\r\n")
    end = body[len(stripped) :]
    match = _FIRST_INDENT.match(body.lstrip(b" \t\r\n"))
    indent = match.group(1).decode("ascii") if match else None
    newline = "\r\n" if b"\r\n" in body[: body.find(b"\n") + 1 or len(body)] else "\n"
    return TextLayout(
        indent=indent,
        newline=newline,
        end=end.decode("ascii"),
        bom=bom,
    )


def dump_as(value: Any, layout: TextLayout = SILLYTAVERN_LAYOUT) -> bytes:
    """A JSON document as bytes in `layout`."""
    text = dumps(value, indent=layout.indent)
    if layout.newline != "\n":
        text = text.replace("\n", layout.newline)  # strings hold `\\n` escapes, never breaks
    text += layout.end
    encoded = text.encode("utf-8")
    return b"\xef\xbb\xbf" + encoded if layout.bom else encoded


def _write(value: Any, out: list[str], indent: str | None, level: int) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, int):
        out.append(str(int(value)))
    elif isinstance(value, float):
        out.append(json_number(value))
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        out.append("{")
        inner, outer = _breaks(indent, level)
        first = True
        for key, item in value.items():
            if not first:
                out.append(",")
            first = False
            out.append(inner)
            out.append(_string(str(key)))
            out.append(": " if indent is not None else ":")
            _write(item, out, indent, level + 1)
        out.append(outer)
        out.append("}")
    elif isinstance(value, list | tuple):
        if not value:
            out.append("[]")
            return
        out.append("[")
        inner, outer = _breaks(indent, level)
        for index, item in enumerate(value):
            if index:
                out.append(",")
            out.append(inner)
            _write(item, out, indent, level + 1)
        out.append(outer)
        out.append("]")
    else:
        raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _breaks(indent: str | None, level: int) -> tuple[str, str]:
    if indent is None:
        return "", ""
    return "\n" + indent * (level + 1), "\n" + indent * level
