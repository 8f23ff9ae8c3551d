"""Lorebooks of other programs, converted the way SillyTavern converts them on import.

SillyTavern's world-info import turns three foreign formats into a world file before it
stores it (formats-world-info.md §9): NovelAI lorebooks (`lorebookVersion`; JSON, or a
PNG with a `naidata` text chunk), Agnai memory books (`"kind": "memory"`) and RisuAI
lorebooks (`"type": "risu"`). Each entry becomes a new-entry template with the mapped
fields laid over it, `uid` and `displayIndex` its position in the list; a field the
source lacks is left out, as `JSON.stringify` leaves out `undefined`. What SillyTavern
does not carry over (NovelAI categories, Agnai priorities, ...) is named in the
conversion's warning.

A card's `character_book` saved as a file of its own is stored unconverted by
SillyTavern (and then misbehaves); here it is converted the way "Import Card Lore"
converts a card's book (formats/character_book.py).

Each conversion starts its warnings with one that names the file and the source format;
values read loosely follow, named by the source file's own fields.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Any

from taverna.errors import FormatError, FormatWarning
from taverna.formats.character_book import (
    CONVERTED_DEFAULTS,
    CONVERTED_ORDER,
    book_to_lorebook,
)
from taverna.formats.coercion import Unfit, as_text, js_truthy, show
from taverna.formats.validation import validate
from taverna.formats.world_info import world_info_from_json
from taverna.model.character import CharacterBook
from taverna.model.js_text import js_trim
from taverna.model.lorebook import Lorebook

__all__ = [
    "agnai_to_lorebook",
    "character_book_to_lorebook",
    "novelai_to_lorebook",
    "risu_to_lorebook",
]

# What an entry of any of the three conversions starts from: a converted entry's defaults,
# with `selective` off, which all three set so.
_BASE: dict[str, Any] = {**CONVERTED_DEFAULTS, "selective": False}

_UNDEFINED = object()
"""A value JavaScript would leave `undefined`: the field is left out of the entry."""

_ENTRY_FIELD = re.compile(r"entries\.(\d+)\.(\w+)\Z")
_MAX_NAMED = 8


class _Conversion:
    """One file's conversion: where its entries are, its notes, its field names."""

    def __init__(
        self,
        source: str,
        *,
        file: str | None,
        prefix: str,
        list_key: str,
        fields: Mapping[str, str],
    ) -> None:
        self.source = source
        self.file = file
        self.prefix = prefix
        self.list_key = list_key
        self.fields = fields  # world-info field -> the source entry's field it comes from
        self.notes: list[FormatWarning] = []

    def where(self, rest: str) -> str:
        return f"{self.prefix}{rest}"

    def fail(
        self, message: str, rest: str, code: str, params: Mapping[str, str | int]
    ) -> FormatError:
        return FormatError(
            message, file=self.file, field=self.where(rest), code=code, params=params
        )

    def note(self, message: str, rest: str) -> None:
        self.notes.append(FormatWarning(message, file=self.file, field=self.where(rest)))

    def items(self, doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """The source's list of entries, each an object."""
        raw = doc.get(self.list_key, _UNDEFINED)
        if not isinstance(raw, list):
            got = "nothing" if raw is _UNDEFINED else show(raw)
            raise self.fail(
                f"{self.source} needs a list of entries, got {got}",
                self.list_key,
                "entries_list_needed",
                {"source": self.source, "value": got},
            )
        for index, item in enumerate(raw):
            if not isinstance(item, Mapping):
                raise self.fail(
                    f"expected an object, got {show(item)}",
                    f"{self.list_key}[{index}]",
                    "unfit_object",
                    {"value": show(item)},
                )
        return raw

    def text(self, value: Any, rest: str) -> str:
        """A value SillyTavern calls a text method on, read as text (null: empty)."""
        try:
            read, note = as_text(value, "")
        except Unfit as exc:
            raise self.fail(str(exc), rest, exc.code, exc.params) from None
        if note is not None:
            self.note(note, rest)
        result: str = read
        return result

    def truth(self, entry: Mapping[str, Any], name: str, index: int, *, meaning: str) -> bool:
        """`!!entry[name]`, noted when the value is not already true or false."""
        value = entry.get(name, _UNDEFINED)
        rest = f"{self.list_key}[{index}].{name}"
        if value is _UNDEFINED:
            self.note(f"missing: read as false ({meaning})", rest)
            return False
        truth = js_truthy(value)
        if not isinstance(value, bool):
            self.note(f"{show(value)} counts as {show(truth)}, as JavaScript reads it", rest)
        return truth

    def lorebook(
        self,
        doc: Mapping[str, Any],
        converted: list[dict[str, Any]],
        *,
        name: str,
        used: Iterable[str],
        marker: str,
        warnings: list[FormatWarning] | None,
    ) -> Lorebook:
        """The world file made of the converted entries, with the conversion's notes."""
        entries: dict[str, dict[str, Any]] = {}
        for index, fields in enumerate(converted):
            entry = {**_BASE, **fields, "uid": index, "displayIndex": index}
            entries[str(index)] = {
                key: entry[key] for key in CONVERTED_ORDER if entry[key] is not _UNDEFINED
            }
        found: list[FormatWarning] = []
        try:
            book = world_info_from_json(
                {"entries": entries}, name=name, file=self.file, warnings=found
            )
        except FormatError as error:  # a value no rule reads, named by the source's field
            field = self._source_field(error.field) or error.field
            raise FormatError(
                error.message, file=self.file, field=field, code=error.code, params=error.params
            ) from None
        if warnings is not None:
            summary = self._summary(doc, len(converted), used, marker)
            warnings.append(FormatWarning(summary, file=self.file, field=self.where(marker)))
            warnings.extend(self.notes)
            warnings.extend(self._in_source_terms(note) for note in found)
        return book

    def _summary(self, doc: Mapping[str, Any], count: int, used: Iterable[str], marker: str) -> str:
        kept = set(used)
        left: dict[str, None] = {k: None for k in doc if k not in (marker, self.list_key)}
        for item in doc.get(self.list_key) or ():
            left.update((f"{self.list_key}[].{k}", None) for k in item if k not in kept)
        text = (
            f"converted from {self.source} as SillyTavern converts it on import: "
            f"{count} {'entry' if count == 1 else 'entries'}"
        )
        if left:
            names = list(left)
            shown = ", ".join(names[:_MAX_NAMED])
            more = f" and {len(names) - _MAX_NAMED} more" if len(names) > _MAX_NAMED else ""
            text += f"; not carried over: {shown}{more}"
        return text

    def _source_field(self, field: str | None) -> str | None:
        """A converted entry's field (`entries.3.order`) as the source's (`data[3].insertorder`)."""
        match = _ENTRY_FIELD.match(field or "")
        if match is None:
            return None
        index, name = match.groups()
        return self.where(f"{self.list_key}[{index}].{self.fields.get(name, name)}")

    def _in_source_terms(self, note: FormatWarning) -> FormatWarning:
        """A note about a converted entry's field, named by the source entry's field."""
        field = self._source_field(note.field)
        return note if field is None else note._replace(field=field)


def _get(entry: Mapping[str, Any], name: str) -> Any:
    return entry.get(name, _UNDEFINED)


def _coalesce(value: Any, default: Any) -> Any:
    # JavaScript's `value ?? default`
    return default if value is None or value is _UNDEFINED else value


def _object(doc: Any, file: str | None, prefix: str) -> Mapping[str, Any]:
    if not isinstance(doc, Mapping):
        raise FormatError(
            f"expected a JSON object, got {show(doc)}",
            file=file,
            field=prefix or None,
            code="expected_json_object_got",
            params={"doc": str(show(doc))},
        )
    return doc


def novelai_to_lorebook(
    doc: Any,
    *,
    name: str,
    file: str | None = None,
    warnings: list[FormatWarning] | None = None,
    prefix: str = "",
) -> Lorebook:
    """A NovelAI lorebook (`lorebookVersion`, `entries` list) as SillyTavern converts it.

    `keys` -> key, `text` -> content, `displayName` -> comment (and addMemo when not
    blank), `contextConfig.budgetPriority` -> order (0 when missing), `enabled` -> not
    disable (a missing flag disables the entry, as in SillyTavern).
    """
    doc = _object(doc, file, prefix)
    run = _Conversion(
        "a NovelAI lorebook",
        file=file,
        prefix=prefix,
        list_key="entries",
        fields={
            "key": "keys",
            "content": "text",
            "comment": "displayName",
            "order": "contextConfig.budgetPriority",
        },
    )
    converted: list[dict[str, Any]] = []
    for index, entry in enumerate(run.items(doc)):
        display = _get(entry, "displayName")
        if display is not _UNDEFINED:
            display = run.text(display, f"entries[{index}].displayName")
        config = entry.get("contextConfig")
        priority = config.get("budgetPriority") if isinstance(config, Mapping) else None
        converted.append(
            {
                "key": _get(entry, "keys"),
                "comment": "" if display is _UNDEFINED else display,
                "content": _get(entry, "text"),
                "order": _coalesce(priority, 0),
                "disable": not run.truth(entry, "enabled", index, meaning="the entry is disabled"),
                "addMemo": display is not _UNDEFINED and js_trim(display) != "",
            }
        )
    used = ("keys", "text", "displayName", "contextConfig", "enabled")
    return run.lorebook(
        doc, converted, name=name, used=used, marker="lorebookVersion", warnings=warnings
    )


def agnai_to_lorebook(
    doc: Any, *, name: str, file: str | None = None, warnings: list[FormatWarning] | None = None
) -> Lorebook:
    """An Agnai memory book (`"kind": "memory"`, `entries` list) as SillyTavern converts it.

    `keywords` -> key, `entry` -> content, `name` -> comment (and addMemo when set),
    `weight` -> order, `enabled` -> not disable. `priority` is not carried over.
    """
    doc = _object(doc, file, "")
    run = _Conversion(
        "an Agnai memory book",
        file=file,
        prefix="",
        list_key="entries",
        fields={"key": "keywords", "content": "entry", "comment": "name", "order": "weight"},
    )
    converted = [
        {
            "key": _get(entry, "keywords"),
            "comment": _get(entry, "name"),
            "content": _get(entry, "entry"),
            "order": _get(entry, "weight"),
            "disable": not run.truth(entry, "enabled", index, meaning="the entry is disabled"),
            "addMemo": js_truthy(entry.get("name")),
        }
        for index, entry in enumerate(run.items(doc))
    ]
    used = ("keywords", "entry", "name", "weight", "enabled")
    return run.lorebook(doc, converted, name=name, used=used, marker="kind", warnings=warnings)


def _split_keys(run: _Conversion, value: Any, rest: str) -> list[str]:
    # JavaScript's `text.split(',').map(x => x.trim())`: "" is one empty key
    return [js_trim(part) for part in run.text(value, rest).split(",")]


def risu_to_lorebook(
    doc: Any, *, name: str, file: str | None = None, warnings: list[FormatWarning] | None = None
) -> Lorebook:
    """A RisuAI lorebook (`"type": "risu"`, `data` list) as SillyTavern converts it.

    `key` and `secondkey` are comma-separated texts, `alwaysActive` -> constant,
    `insertorder` -> order, `activationPercent` -> probability (and useProbability, so a
    percentage of 0 turns the dice off), `comment`, `content` and `selective` as they are.
    """
    doc = _object(doc, file, "")
    run = _Conversion(
        "a RisuAI lorebook",
        file=file,
        prefix="",
        list_key="data",
        fields={
            "key": "key",
            "keysecondary": "secondkey",
            "constant": "alwaysActive",
            "order": "insertorder",
            "probability": "activationPercent",
        },
    )
    converted: list[dict[str, Any]] = []
    for index, entry in enumerate(run.items(doc)):
        at = f"data[{index}]"
        if "key" not in entry:
            run.note("missing: read as no keys", f"{at}.key")
            keys: Any = []
        elif entry["key"] is None:
            run.note("null is read as no keys", f"{at}.key")
            keys = []
        else:
            keys = _split_keys(run, entry["key"], f"{at}.key")
        second = entry.get("secondkey")
        percent = entry.get("activationPercent")
        converted.append(
            {
                "key": keys,
                "keysecondary": _split_keys(run, second, f"{at}.secondkey")
                if js_truthy(second)
                else [],
                "comment": _get(entry, "comment"),
                "content": _get(entry, "content"),
                "constant": _get(entry, "alwaysActive"),
                "selective": _get(entry, "selective"),
                "order": _get(entry, "insertorder"),
                "disable": False,
                "addMemo": True,
                "probability": _coalesce(percent, 100),
                "useProbability": True if percent is None else js_truthy(percent),
            }
        )
    used = (
        "key",
        "secondkey",
        "comment",
        "content",
        "alwaysActive",
        "selective",
        "insertorder",
        "activationPercent",
    )
    return run.lorebook(doc, converted, name=name, used=used, marker="type", warnings=warnings)


def character_book_to_lorebook(
    doc: Any, *, name: str, file: str | None = None, warnings: list[FormatWarning] | None = None
) -> Lorebook:
    """A card's `character_book` saved as a file of its own, converted as SillyTavern's
    "Import Card Lore" converts a card's book (the whole book kept as `originalData`).

    The lorebook is named `name` (the file's stem), as SillyTavern names an import.
    """
    doc = _object(doc, file, "")
    found: list[FormatWarning] = []
    book = validate(CharacterBook, doc, file=file, warnings=found)
    lorebook = book_to_lorebook(book, card_name=name, file=file, warnings=found, where="")
    if warnings is not None:
        count = len(book.entries)
        warnings.append(
            FormatWarning(
                "converted from a card's embedded lorebook (character_book) as SillyTavern's "
                f'"Import Card Lore" converts it: {count} {"entry" if count == 1 else "entries"}; '
                "the book is kept whole as originalData",
                file=file,
                field="entries",
            )
        )
        warnings.extend(found)
    return dataclasses.replace(lorebook, name=name)
