"""A card's embedded lorebook (`character_book`) to and from a SillyTavern lorebook.

`book_to_lorebook` is SillyTavern's "Import Card Lore" (formats-character-card.md §7.2);
`lorebook_to_book` is what it embeds into a card whose linked world exists (§7.3).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from taverna.errors import FormatWarning
from taverna.formats.coercion import show
from taverna.formats.validation import validate
from taverna.formats.world_info import assign_uids, world_info_from_json, world_info_to_json
from taverna.model.character import CharacterBook
from taverna.model.lorebook import ENTRY_FIELDS, Lorebook, new_entry_json

_APPENDED = ("uid", "displayIndex", "characterFilter")

# WI entry field <- book entry `extensions` key, §7.2; a key the book entry lacks gives
# the field's value in CONVERTED_DEFAULTS.
_FROM_EXTENSIONS: tuple[tuple[str, str], ...] = (
    ("excludeRecursion", "exclude_recursion"),
    ("preventRecursion", "prevent_recursion"),
    ("delayUntilRecursion", "delay_until_recursion"),
    ("probability", "probability"),
    ("useProbability", "useProbability"),
    ("depth", "depth"),
    ("selectiveLogic", "selectiveLogic"),
    ("group", "group"),
    ("groupOverride", "group_override"),
    ("groupWeight", "group_weight"),
    ("scanDepth", "scan_depth"),
    ("caseSensitive", "case_sensitive"),
    ("matchWholeWords", "match_whole_words"),
    ("useGroupScoring", "use_group_scoring"),
    ("automationId", "automation_id"),
    ("role", "role"),
    ("vectorized", "vectorized"),
    ("sticky", "sticky"),
    ("cooldown", "cooldown"),
    ("delay", "delay"),
)

CONVERTED_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {**new_entry_json(), "delayUntilRecursion": False}
)
"""What SillyTavern gives a field of an entry it converts from another format when the
source has no value: its new-entry template's value, but `delayUntilRecursion`, which its
conversions write as `false` (the template: `0`)."""


def _coalesce(value: Any, default: Any) -> Any:
    # JavaScript's `value ?? default`
    return default if value is None else value


def _ext(extensions: dict[str, Any], key: str, default: Any) -> Any:
    return extensions.get(key, default) if extensions.get(key) is not None else default


def book_to_lorebook(
    book: CharacterBook,
    *,
    card_name: str,
    file: str | None = None,
    warnings: list[FormatWarning] | None = None,
    where: str = "data.character_book",
) -> Lorebook:
    """The world-info lorebook SillyTavern makes of a card's book (§7.2).

    The whole book is kept verbatim as `originalData`, as SillyTavern does. Where
    SillyTavern lets entries with the same `id` overwrite each other, every entry is kept
    here and the later ones renumbered (`assign_uids`); that and every value read loosely
    is noted in `warnings`, named by its field in the book (`where`).
    """
    original = book.to_json()
    items: list[dict[str, Any]] = []
    own: list[int | None] = []
    for index, entry in enumerate(book.entries):
        ext = entry.extensions
        own.append(_book_id(entry.id, index))
        if entry.id is None:
            original["entries"][index]["id"] = index  # §7.2: written back into the book
        comment = entry.comment or ""
        position = ext.get("position")
        if position is None:
            position = 0 if entry.position == "before_char" else 1
        item: dict[str, Any] = {
            "key": list(entry.keys),
            "keysecondary": list(entry.secondary_keys or []),
            "comment": comment,
            "content": entry.content,
            "constant": bool(entry.constant),
            "selective": bool(entry.selective),
            "order": entry.insertion_order,
            "position": position,
            "disable": not entry.enabled,
            "addMemo": bool(comment),
            "displayIndex": _ext(ext, "display_index", index),
        }
        for wi_key, ext_key in _FROM_EXTENSIONS:
            item[wi_key] = _ext(ext, ext_key, CONVERTED_DEFAULTS[wi_key])
        items.append(item)
    uids = assign_uids([str(index) for index in range(len(items))], own)
    entries: dict[str, dict[str, Any]] = {}
    notes: list[FormatWarning] = []
    for index, (item, mine, uid) in enumerate(zip(items, own, uids, strict=True)):
        raw_id = book.entries[index].id
        if isinstance(raw_id, str):
            read = f"the number {mine}" if mine is not None else f"uid {uid}"
            notes.append(
                FormatWarning(
                    f"the text {show(raw_id)} is read as {read}",
                    file=file,
                    field=_at(where, f"entries[{index}].id"),
                )
            )
        if mine is not None and mine != uid:
            notes.append(
                FormatWarning(
                    f"id {mine} is also the id of an earlier entry: renumbered to {uid} "
                    "(SillyTavern would keep only the last of them)",
                    file=file,
                    field=_at(where, f"entries[{index}].id"),
                )
            )
        item["uid"] = uid
        # Key order as SillyTavern's conversion leaves it: the new-entry template's fields,
        # then `uid` and `displayIndex`, which the template lacks.
        entries[str(uid)] = {name: item[name] for name in CONVERTED_ORDER if name in item}
    name = book.name or f"{card_name}'s Lorebook"
    found: list[FormatWarning] = []
    lorebook = world_info_from_json(
        {"entries": entries, "originalData": original}, name=name, file=file, warnings=found
    )
    if warnings is not None:
        index_of = {str(uid): index for index, uid in enumerate(uids)}
        warnings.extend(notes)
        warnings.extend(_in_book_terms(note, index_of, where) for note in found)
    return lorebook


CONVERTED_ORDER: tuple[str, ...] = (
    *(name for _, name in ENTRY_FIELDS if name not in _APPENDED),
    "uid",
    "displayIndex",
)
"""Key order of an entry SillyTavern converts from another format: its new-entry
template's fields, then `uid` and `displayIndex`, which the template lacks."""
_EXTENSION_OF = dict(_FROM_EXTENSIONS) | {"displayIndex": "display_index"}
_BOOK_FIELD_OF = {"key": "keys", "keysecondary": "secondary_keys", "order": "insertion_order"}


def _at(where: str, rest: str) -> str:
    """A field path under `where` (nothing: the book is the file itself)."""
    return f"{where}.{rest}" if where else rest


def _book_id(value: int | str | None, index: int) -> int | None:
    """The uid a book entry's `id` asks for (a number, or a number written as text)."""
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isascii() and value.strip().isdecimal():
        return int(value)
    return index if value is None else None


def _in_book_terms(note: FormatWarning, index_of: Mapping[str, int], where: str) -> FormatWarning:
    """A note about the converted lorebook's field, named by the card book's field."""
    parts = (note.field or "").split(".")
    if len(parts) < 3 or parts[0] != "entries" or parts[1] not in index_of:
        return note
    entry = _at(where, f"entries[{index_of[parts[1]]}]")
    name = parts[2]
    if name in _EXTENSION_OF:
        field = f"{entry}.extensions.{_EXTENSION_OF[name]}"
    else:
        field = f"{entry}.{_BOOK_FIELD_OF.get(name, name)}"
    return FormatWarning(note.message, file=note.file, field=field)


# book entry `extensions` key <- WI entry field, §7.3: a field in _LEFT_OUT_WHEN_ABSENT is
# left out when the entry lacks it (JSON.stringify drops undefined); any other is
# `field ?? default`, the default from _EXPORT_DEFAULTS.
_TO_EXTENSIONS: tuple[tuple[str, str], ...] = (
    ("position", "position"),
    ("exclude_recursion", "excludeRecursion"),
    ("display_index", "displayIndex"),
    ("probability", "probability"),
    ("useProbability", "useProbability"),
    ("depth", "depth"),
    ("selectiveLogic", "selectiveLogic"),
    ("group", "group"),
    ("group_override", "groupOverride"),
    ("group_weight", "groupWeight"),
    ("prevent_recursion", "preventRecursion"),
    ("delay_until_recursion", "delayUntilRecursion"),
    ("scan_depth", "scanDepth"),
    ("match_whole_words", "matchWholeWords"),
    ("use_group_scoring", "useGroupScoring"),
    ("case_sensitive", "caseSensitive"),
    ("automation_id", "automationId"),
    ("role", "role"),
    ("vectorized", "vectorized"),
    ("sticky", "sticky"),
    ("cooldown", "cooldown"),
    ("delay", "delay"),
)
_LEFT_OUT_WHEN_ABSENT = frozenset({"position", "excludeRecursion", "displayIndex"})
# SillyTavern's export falls back to a converted entry's values, but for these four.
_EXPORT_DEFAULTS: Mapping[str, Any] = {
    **CONVERTED_DEFAULTS,
    "probability": None,
    "useProbability": False,
    "groupWeight": None,
    "useGroupScoring": False,
}

# book entry key <- WI entry field, copied as is (left out when absent)
_TO_ENTRY = (
    ("keys", "key"),
    ("secondary_keys", "keysecondary"),
    ("comment", "comment"),
    ("content", "content"),
    ("constant", "constant"),
    ("selective", "selective"),
    ("insertion_order", "order"),
)


def lorebook_to_book(lorebook: Lorebook, *, file: str | None = None) -> CharacterBook:
    """The `character_book` SillyTavern writes into a card linked to `lorebook` (§7.3)."""
    raw = world_info_to_json(lorebook)["entries"]
    # JavaScript walks integer-like object keys in ascending order, then the others
    keys = sorted(raw, key=lambda k: (0, int(k), "") if k.isdecimal() else (1, 0, k))
    entries = []
    for key in keys:
        wi = raw[key]
        entry: dict[str, Any] = {}
        if "uid" in wi:
            entry["id"] = wi["uid"]
        for book_key, wi_key in _TO_ENTRY:
            if wi_key in wi:
                entry[book_key] = wi[wi_key]
        entry["enabled"] = not wi.get("disable")
        # JavaScript's loose `position == 0`: 0, "0", "" and false count as before
        before = "position" in wi and wi["position"] in (0, "0", "")
        entry["position"] = "before_char" if before else "after_char"
        entry["use_regex"] = True
        extensions: dict[str, Any] = {}
        for ext_key, wi_key in _TO_EXTENSIONS:
            if wi_key in _LEFT_OUT_WHEN_ABSENT:
                if wi_key in wi:
                    extensions[ext_key] = wi[wi_key]
            else:
                extensions[ext_key] = _coalesce(wi.get(wi_key), _EXPORT_DEFAULTS[wi_key])
        entry["extensions"] = extensions
        entries.append(entry)
    return validate(CharacterBook, {"entries": entries, "name": lorebook.name}, file=file)
