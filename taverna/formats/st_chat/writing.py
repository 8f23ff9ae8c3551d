"""Writing a chat document back as its file, byte for byte where SillyTavern wrote it,
and as SillyTavern's plain-text export."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from taverna.formats.json_text import json_number
from taverna.formats.st_chat.lines import ChatDocument, JsonValue

# Python prints some floats differently from JavaScript (`1e-07`, `1e+16`, `5.0`); only lines
# where such a token may occur take the slower exact path.
_PY_ONLY_FLOAT = re.compile(r"[0-9]e[+-][0-9]|[0-9]\.0(?![0-9])")


def _dump_exact(value: JsonValue, out: list[str]) -> None:
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, float):
        out.append(json_number(value))
    elif isinstance(value, list):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _dump_exact(item, out)
        out.append("]")
    else:
        out.append("{")
        for index, (key, item) in enumerate(value.items()):
            if index:
                out.append(",")
            out.append(json.dumps(key, ensure_ascii=False))
            out.append(":")
            _dump_exact(item, out)
        out.append("}")


def dump_json(value: JsonValue) -> str:
    """One JSON value as compact text the way JavaScript's `JSON.stringify` writes it."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if _PY_ONLY_FLOAT.search(text) is None:
        return text
    out: list[str] = []
    _dump_exact(value, out)
    return "".join(out)


def chat_lines(document: ChatDocument) -> Iterator[str]:
    """The lines of a chat file, header first, without line breaks."""
    if document.header is not None:
        yield dump_json(document.header.fields)
    for message in document.messages:
        yield dump_json(message.fields)


def write_chat(document: ChatDocument) -> str:
    """The chat as its file was: compact JSON lines joined by its line break (SillyTavern's
    `\\n`, no final newline, for a chat made here)."""
    layout = document.layout
    text = layout.newline.join(chat_lines(document)) + layout.end
    return "\ufeff" + text if layout.bom else text


def chat_as_text(document: ChatDocument) -> str:
    """The chat as SillyTavern's plain-text export (formats-chat.md §10).

    `<name>: <text>` and a blank line per message with text, hidden messages left out, the
    shown text (`extra.display_text`) preferred.
    """
    parts = []
    for message in document.messages:
        if message.hidden or not message.text:
            continue
        shown = message.extra.get("display_text")
        text = shown if isinstance(shown, str) and shown else message.text
        parts.append(f"{message.name}: {text}\n\n")
    return "".join(parts)
