"""U+0000 on PostgreSQL: stored faithfully through an escape the driver applies.

Python, JSON and SQLite hold U+0000 in text like any other character; PostgreSQL's
`text` and `jsonb` cannot, so a card, a message or a model's reply with one failed to
save. On PostgreSQL every string the store sends passes an escape: U+0000 becomes
`ESC 0` and `ESC` itself `ESC ESC`, ESC being U+FDD0, a noncharacter Unicode sets
aside for a program's own use. Text columns read back go through the reverse, and JSON
documents (keys and strings) get the same both ways. A string with neither character
(all but a rare few) passes untouched, and an escaped one compares equal to what the
same text is stored as, so lookups by name or title still find it. Identifier columns
(`varchar`) hold only ids the product makes, and are read as they are.
"""

from __future__ import annotations

import json
import re
from typing import Any

from psycopg.adapt import AdaptersMap, Buffer
from psycopg.types import string

ESC = "\ufdd0"
_ESC_BYTES = ESC.encode()
_ESCAPED = re.compile(f"{ESC}([{ESC}0])")
# How json.dumps writes the two characters (ASCII escapes), to tell at a glance
# whether a document needs the walk.
_IN_JSON = ("\\u0000", "\\ufdd0")


def escape(text: str) -> str:
    """`text` as PostgreSQL can store it."""
    if "\x00" not in text and ESC not in text:
        return text
    return text.replace(ESC, ESC + ESC).replace("\x00", ESC + "0")


def unescape(text: str) -> str:
    """The text `escape` was given."""
    if ESC not in text:
        return text
    return _ESCAPED.sub(lambda found: ESC if found[1] == ESC else "\x00", text)


def _walk(value: Any, change: Any) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {
            (change(k) if isinstance(k, str) else k): _walk(v, change) for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_walk(item, change) for item in value]
    return value


def dumps(value: Any) -> str:
    """JSON for a `jsonb` column: json.dumps with every string escaped."""
    text = json.dumps(value)
    if not any(mark in text for mark in _IN_JSON):
        return text
    return json.dumps(_walk(value, escape))


def loads(data: str | bytes) -> Any:
    """A `jsonb` value as PostgreSQL sends it (characters as they are), unescaped."""
    value = json.loads(data)
    marked = _ESC_BYTES in data if isinstance(data, bytes) else ESC in data
    return _walk(value, unescape) if marked else value


def _escaping(dumper: type[Any]) -> type[Any]:
    class Escaping(dumper):  # type: ignore[misc]
        def dump(self, obj: str) -> Buffer | None:
            return super().dump(escape(obj))  # type: ignore[no-any-return]

    Escaping.__name__ = f"Escaping{dumper.__name__}"
    return Escaping


class UnescapingTextLoader(string.TextLoader):
    """`text` values as they were written."""

    def load(self, data: Buffer) -> bytes | str:
        value = super().load(data)
        return unescape(value) if isinstance(value, str) else value


class UnescapingTextBinaryLoader(string.TextBinaryLoader):
    def load(self, data: Buffer) -> bytes | str:
        value = super().load(data)
        return unescape(value) if isinstance(value, str) else value


# In the order psycopg registers its own: the last one is the default for `str`.
_DUMPERS = [
    _escaping(dumper)
    for dumper in (
        string.StrBinaryDumperName,
        string.StrBinaryDumperVarchar,
        string.StrBinaryDumper,
        string.StrDumperName,
        string.StrDumperVarchar,
        string.StrDumper,
        string.StrDumperUnknown,
    )
]


def install(adapters: AdaptersMap) -> None:
    """Escape every string sent and unescape every `text` value read, on one connection."""
    for dumper in _DUMPERS:
        adapters.register_dumper(str, dumper)
    adapters.register_loader("text", UnescapingTextLoader)
    adapters.register_loader("text", UnescapingTextBinaryLoader)
