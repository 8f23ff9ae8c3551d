"""SillyTavern world info files (`worlds/<name>.json`): read and write, losslessly.

`read_world_info` turns the file's JSON into a `Lorebook`; `world_info_to_json` turns
it back. Reading then writing gives the same JSON: the same keys in the same order,
the same value types (`false` stays `false`, `0` stays `0`), unknown fields kept
(formats-world-info.md §1-2). Bad input raises `FormatError` naming the file and the
field (`entries.<key>.<field>`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from taverna.errors import FormatError, FormatWarning, library_cause
from taverna.formats.coercion import Unfit, as_bool, as_number, as_text, as_texts
from taverna.model.injection import InjectionRole
from taverna.model.js_number import parse_js_number
from taverna.model.lorebook import (
    ENTRY_FIELDS,
    JSON_TO_ATTR,
    MISSING_VALUES,
    CharacterFilter,
    Entry,
    Lorebook,
    Position,
    SelectiveLogic,
    entry_to_json,
    ordered_fields,
)

__all__ = [
    "assign_uids",
    "dump_world_info",
    "entry_from_json",
    "entry_to_json",
    "read_world_info",
    "world_info_from_json",
    "world_info_to_json",
]


class _Reader:
    """Type checks for one entry, reporting errors with the file and field path.

    Loose values SillyTavern opens are read as it reads them (formats/coercion.py), each
    noted in `warnings`; a null reads as the value SillyTavern's generation code gives
    the missing field.
    """

    def __init__(
        self, file: str | None, path: str, warnings: list[FormatWarning] | None = None
    ) -> None:
        self.file = file
        self.path = path
        self.warnings = warnings

    def fail(
        self, name: str, message: str, code: str, params: Mapping[str, str | int]
    ) -> FormatError:
        field = f"{self.path}.{name}"
        return FormatError(message, file=self.file, field=field, code=code, params=params)

    def note(self, name: str, message: str) -> None:
        if self.warnings is not None:
            self.warnings.append(
                FormatWarning(message, file=self.file, field=f"{self.path}.{name}")
            )

    def _read(self, name: str, read: Callable[[], tuple[Any, str | None]]) -> Any:
        try:
            value, note = read()
        except Unfit as exc:
            raise self.fail(name, str(exc), exc.code, exc.params) from None
        if note is not None:
            self.note(name, note)
        return value

    def integer(self, name: str, value: Any) -> int:
        default = _NULL_READS.get(name, 0)
        result: int = self._read(name, lambda: as_number(value, default, integer=True))
        return result

    def number(self, name: str, value: Any) -> int | float:
        default = _NULL_READS.get(name, 0)
        result: int | float = self._read(name, lambda: as_number(value, default))
        return result

    def boolean(self, name: str, value: Any) -> bool:
        default = _NULL_READS.get(name, False)
        result: bool = self._read(name, lambda: as_bool(value, default))
        return result

    def text(self, name: str, value: Any) -> str:
        result: str = self._read(name, lambda: as_text(value, ""))
        return result

    def texts(self, name: str, value: Any) -> tuple[str, ...]:
        result: list[str] = self._read(name, lambda: as_texts(value))
        return tuple(result)

    def optional(self, read: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
        def inner(name: str, value: Any) -> Any:
            return None if value is None else read(name, value)

        return inner

    def enum(self, kind: type[Any], name: str, value: Any) -> Any:
        if value is None:
            default = _NULL_READS.get(name)
            if default is not None:  # a null position stays null: inserted nowhere, as missing
                self.note(name, f"null is read as {int(default)}, the default")
            return default
        number = self.integer(name, value)
        try:
            return kind(number)
        except ValueError:
            allowed = ", ".join(str(int(member)) for member in kind)
            raise self.fail(
                name,
                f"{number} is not one of {allowed}",
                "not_one_of",
                {"value": number, "allowed": allowed},
            ) from None

    def bool_or_int(self, name: str, value: Any) -> bool | int:
        if isinstance(value, bool | int):
            return value
        if isinstance(value, str) and value.strip() and parse_js_number(value) is not None:
            return self.integer(name, value)
        if isinstance(value, float):
            return self.integer(name, value)
        return self.boolean(name, value)

    def character_filter(self, name: str, value: Any) -> CharacterFilter:
        if not isinstance(value, Mapping):
            raise self.fail(
                name,
                f"expected an object, got {_describe(value)}",
                "unfit_object",
                {"value": _describe(value)},
            )
        sub = _Reader(self.file, f"{self.path}.{name}", self.warnings)
        known = {"isExclude", "names", "tags"}
        missing = frozenset(k for k in known if k not in value)
        return CharacterFilter(
            is_exclude=sub.boolean("isExclude", value.get("isExclude", False)),
            names=sub.texts("names", value.get("names", [])),
            tags=sub.texts("tags", value.get("tags", [])),
            extras={k: v for k, v in value.items() if k not in known},
            missing=missing,
            field_order=tuple(value),
        )


# What a null reads as, by JSON name: the value SillyTavern's generation code gives the
# field when it is missing (formats-world-info.md §2), else a new entry's default.
_ENTRY_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Entry)}
_NULL_READS: dict[str, Any] = {
    json_name: MISSING_VALUES.get(attr, _ENTRY_DEFAULTS.get(attr))
    for attr, json_name in ENTRY_FIELDS
}


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return f"{value!r}"


def _converters(reader: _Reader) -> dict[str, Callable[[str, Any], Any]]:
    opt = reader.optional
    return {
        "uid": reader.integer,
        "key": reader.texts,
        "keysecondary": reader.texts,
        "comment": reader.text,
        "content": reader.text,
        "constant": reader.boolean,
        "vectorized": reader.boolean,
        "selective": reader.boolean,
        "selectiveLogic": lambda n, v: reader.enum(SelectiveLogic, n, v),
        "addMemo": reader.boolean,
        "order": reader.number,
        "position": lambda n, v: reader.enum(Position, n, v),
        "disable": reader.boolean,
        "excludeRecursion": reader.boolean,
        "preventRecursion": reader.boolean,
        "delayUntilRecursion": reader.bool_or_int,
        "probability": reader.number,
        "useProbability": reader.boolean,
        "depth": opt(reader.integer),
        "group": reader.text,
        "groupOverride": reader.boolean,
        "groupWeight": opt(reader.number),
        "scanDepth": opt(reader.integer),
        "caseSensitive": opt(reader.boolean),
        "matchWholeWords": opt(reader.boolean),
        "useGroupScoring": opt(reader.boolean),
        "automationId": reader.text,
        "role": opt(lambda n, v: reader.enum(InjectionRole, n, v)),
        "sticky": opt(reader.integer),
        "cooldown": opt(reader.integer),
        "delay": opt(reader.integer),
        "displayIndex": opt(reader.integer),
        "characterFilter": opt(reader.character_filter),
    }


# Each field's plain JSON value types, checked in one cheap pass; a value of another
# type goes through the detailed reader, which converts it or names the bad field.
_NONE = type(None)
_INT, _NUMBER, _BOOL = frozenset({int}), frozenset({int, float}), frozenset({bool})
_PLAIN_TYPES: dict[str, frozenset[type]] = {
    "uid": _INT,
    "comment": frozenset({str}),
    "content": frozenset({str}),
    "group": frozenset({str}),
    "automationId": frozenset({str}),
    "order": _NUMBER,
    "probability": _NUMBER,
    "delayUntilRecursion": frozenset({bool, int}),
    "groupWeight": _NUMBER | {_NONE},
    **dict.fromkeys(
        ("depth", "scanDepth", "sticky", "cooldown", "delay", "displayIndex"), _INT | {_NONE}
    ),
    **dict.fromkeys(("caseSensitive", "matchWholeWords", "useGroupScoring"), _BOOL | {_NONE}),
    **dict.fromkeys(
        (
            "constant",
            "vectorized",
            "selective",
            "addMemo",
            "disable",
            "excludeRecursion",
            "preventRecursion",
            "groupOverride",
            "useProbability",
        ),
        _BOOL,
    ),
}
_TEXT_LISTS = frozenset(("key", "keysecondary"))
_ENUM_VALUES: dict[str, dict[int, Any]] = {
    "selectiveLogic": {int(m): m for m in SelectiveLogic},
    "position": {int(m): m for m in Position},
    "role": {int(m): m for m in InjectionRole},
}
_KNOWN = frozenset(JSON_TO_ATTR)
_ALL_PRESENT: frozenset[str] = frozenset()


def entry_from_json(
    data: Any,
    *,
    file: str | None = None,
    path: str = "entry",
    uid: int | None = None,
    warnings: list[FormatWarning] | None = None,
) -> Entry:
    """One entry object of a world file as an `Entry`.

    `uid` is used when the object has no `uid` of its own (or a null one). Loose values
    are read as SillyTavern reads them, each noted in `warnings`.
    """
    if not isinstance(data, Mapping):
        raise FormatError(
            f"expected an object, got {_describe(data)}",
            file=file,
            field=path,
            code="expected_object_got",
            params={"data": str(_describe(data))},
        )
    values: dict[str, Any] = {}
    extras: dict[str, Any] = {}
    slow: list[str] = []
    for json_name, value in data.items():
        if json_name not in _KNOWN:
            extras[json_name] = value
            continue
        kind = type(value)
        allowed = _PLAIN_TYPES.get(json_name)
        if allowed is not None:
            if kind in allowed:
                values[JSON_TO_ATTR[json_name]] = value
                continue
        elif json_name in _TEXT_LISTS:
            if kind is list and all(type(item) is str for item in value):
                values[JSON_TO_ATTR[json_name]] = tuple(value)
                continue
        elif json_name in _ENUM_VALUES:
            member = _ENUM_VALUES[json_name].get(value) if kind is int else None
            if member is not None or (value is None and json_name == "role"):
                values[JSON_TO_ATTR[json_name]] = member
                continue
        elif value is None:  # characterFilter
            values[JSON_TO_ATTR[json_name]] = None
            continue
        slow.append(json_name)
    reader = _Reader(file, path, warnings)
    if slow:
        converters = _converters(reader)
        for json_name in slow:
            if json_name == "uid" and data[json_name] is None:
                continue  # the book gives it one
            values[JSON_TO_ATTR[json_name]] = converters[json_name](json_name, data[json_name])
    missing = (
        _ALL_PRESENT
        if len(values) == len(ENTRY_FIELDS)
        else frozenset(name for _, name in ENTRY_FIELDS if name not in data)
    )
    if "uid" not in values:
        if uid is None:
            raise reader.fail("uid", "the entry has no uid", "entry_has_no_uid", {})
        values["uid"] = uid
    if missing:
        for attr, json_name in ENTRY_FIELDS:
            if json_name in missing and attr in MISSING_VALUES:
                values[attr] = MISSING_VALUES[attr]
    return Entry(**values, extras=extras, missing=missing, field_order=tuple(data))


def _canonical_number(key: str) -> int | None:
    """The uid a key of `entries` names, if it is one as JavaScript writes it ("7", not "07")."""
    if key.isascii() and key.isdecimal() and str(int(key)) == key:
        return int(key)
    return None


def assign_uids(keys: Sequence[str], own: Sequence[int | None]) -> list[int]:
    """The uid each entry of a book gets, so that no two share one.

    SillyTavern uses every entry of a book whatever its uid, and gives a new entry the
    smallest unused number. An entry keeps its own uid unless an earlier entry has it;
    one without a usable uid takes its key when that is a free number, else the
    smallest unused number.
    """
    result: list[int | None] = [None] * len(keys)
    taken: set[int] = set()
    for index, uid in enumerate(own):
        if uid is not None and uid not in taken:
            result[index] = uid
            taken.add(uid)
    for index, key in enumerate(keys):
        number = _canonical_number(key)
        if result[index] is None and number is not None and number not in taken:
            result[index] = number
            taken.add(number)
    free = 0
    for index in range(len(keys)):
        if result[index] is None:
            while free in taken:
                free += 1
            result[index] = free
            taken.add(free)
    return [uid for uid in result if uid is not None]


# The uid given to an entry without one, until the book numbers it (no real uid is this).
_NO_UID = -(2**63)


def world_info_from_json(
    data: Any,
    *,
    name: str,
    file: str | None = None,
    warnings: list[FormatWarning] | None = None,
) -> Lorebook:
    """A parsed world file (`{"entries": {...}}`) as a `Lorebook` named `name`.

    Entries stored under a key other than their uid, without a uid or with a uid another
    entry has, are kept and numbered by `assign_uids`; each change is noted in `warnings`.
    """
    if not isinstance(data, Mapping):
        raise FormatError(
            f"expected a JSON object, got {_describe(data)}",
            file=file,
            code="expected_json_object_got_data",
            params={"data": str(_describe(data))},
        )
    if "entries" not in data:
        raise FormatError(
            "a world info file needs an 'entries' object",
            file=file,
            field="entries",
            code="world_info_file_needs_entries",
        )
    raw_entries = data["entries"]
    if isinstance(raw_entries, list) and not raw_entries:
        # some tools write no entries as `[]`; SillyTavern reads it as none
        if warnings is not None:
            warnings.append(
                FormatWarning(
                    "an empty list is read as an empty object", file=file, field="entries"
                )
            )
        raw_entries = {}
    if not isinstance(raw_entries, Mapping):
        raise FormatError(
            f"expected an object keyed by uid, got {_describe(raw_entries)}",
            file=file,
            field="entries",
            code="expected_object_keyed_by_uid",
            params={"raw_entries": str(_describe(raw_entries))},
        )
    keys: list[str] = []
    parsed: list[Entry] = []
    for key, raw in raw_entries.items():
        keys.append(key)
        parsed.append(
            entry_from_json(raw, file=file, path=f"entries.{key}", uid=_NO_UID, warnings=warnings)
        )
    own = [None if entry.uid == _NO_UID else entry.uid for entry in parsed]
    uids = assign_uids(keys, own)
    entries: list[Entry] = []
    owner: dict[int, str] = {}
    for key, entry, mine, uid in zip(keys, parsed, own, uids, strict=True):
        if mine is not None and mine not in owner:
            owner[mine] = key
        if mine != uid or key != str(uid):
            if warnings is not None:
                warnings.append(
                    FormatWarning(
                        _renumbered(key, mine, uid, owner), file=file, field=f"entries.{key}"
                    )
                )
            entry = entry.changed(uid=uid)
        entries.append(entry)
    extras = {k: v for k, v in data.items() if k != "entries"}
    return Lorebook(name=name, entries=tuple(entries), extras=extras, field_order=tuple(data))


def _renumbered(key: str, mine: int | None, uid: int, owner: Mapping[int, str]) -> str:
    if mine is None:
        return f'the entry has no uid: it gets uid {uid} (stored under "{uid}")'
    if mine == uid:
        return f'stored under the key "{key}" but its uid is {uid}: kept under "{uid}"'
    return (
        f'uid {mine} is also the uid of the entry under "{owner[mine]}": '
        f"this one is renumbered to {uid}"
    )


def read_world_info(
    text: str | bytes,
    *,
    name: str,
    file: str | None = None,
    warnings: list[FormatWarning] | None = None,
) -> Lorebook:
    """A world file's text as a `Lorebook`; `file` names it in error messages."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise FormatError(
                f"not UTF-8 text ({error.reason})",
                file=file,
                code="not_utf_8_text",
                params={"reason": str(error.reason), **library_cause(error)},
            ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise FormatError(
            f"not valid JSON: {error.msg} at line {error.lineno} column {error.colno}",
            file=file,
            code="not_valid_json_at_line",
            params={"msg": str(error.msg), "lineno": str(error.lineno), "colno": str(error.colno)},
        ) from None
    return world_info_from_json(data, name=name, file=file, warnings=warnings)


def world_info_to_json(book: Lorebook) -> dict[str, Any]:
    """A `Lorebook` as the JSON object of a SillyTavern world file."""
    entries = {str(entry.uid): entry_to_json(entry) for entry in book.entries}
    return ordered_fields({"entries": entries}, book.extras, book.field_order)


def dump_world_info(book: Lorebook) -> str:
    """A `Lorebook` as file text, formatted the way SillyTavern writes it (4-space indent)."""
    return json.dumps(world_info_to_json(book), ensure_ascii=False, indent=4)
