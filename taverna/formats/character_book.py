"""A card's embedded lorebook (`character_book`) to and from a SillyTavern lorebook.

`book_to_lorebook` is SillyTavern's "Import Card Lore" (formats-character-card.md §7.2);
`lorebook_to_book` is what it embeds into a card whose linked world exists (§7.3).
"""

from __future__ import annotations

from typing import Any

from taverna.formats.validation import validate
from taverna.formats.world_info import world_info_from_json, world_info_to_json
from taverna.model.character import CharacterBook
from taverna.model.lorebook import ENTRY_FIELDS, Lorebook

_APPENDED = ("uid", "displayIndex", "characterFilter")

# WI entry field <- (book entry `extensions` key, default when absent), §7.2.
_FROM_EXTENSIONS: tuple[tuple[str, str, Any], ...] = (
    ("excludeRecursion", "exclude_recursion", False),
    ("preventRecursion", "prevent_recursion", False),
    ("delayUntilRecursion", "delay_until_recursion", False),
    ("probability", "probability", 100),
    ("useProbability", "useProbability", True),
    ("depth", "depth", 4),
    ("selectiveLogic", "selectiveLogic", 0),
    ("group", "group", ""),
    ("groupOverride", "group_override", False),
    ("groupWeight", "group_weight", 100),
    ("scanDepth", "scan_depth", None),
    ("caseSensitive", "case_sensitive", None),
    ("matchWholeWords", "match_whole_words", None),
    ("useGroupScoring", "use_group_scoring", None),
    ("automationId", "automation_id", ""),
    ("role", "role", 0),
    ("vectorized", "vectorized", False),
    ("sticky", "sticky", None),
    ("cooldown", "cooldown", None),
    ("delay", "delay", None),
)


def _coalesce(value: Any, default: Any) -> Any:
    # JavaScript's `value ?? default`
    return default if value is None else value


def _ext(extensions: dict[str, Any], key: str, default: Any) -> Any:
    return extensions.get(key, default) if extensions.get(key) is not None else default


def book_to_lorebook(book: CharacterBook, *, card_name: str, file: str | None = None) -> Lorebook:
    """The world-info lorebook SillyTavern makes of a card's book (§7.2).

    The whole book is kept verbatim as `originalData`, as SillyTavern does.
    """
    original = book.to_json()
    entries: dict[str, dict[str, Any]] = {}
    for index, entry in enumerate(book.entries):
        ext = entry.extensions
        uid = entry.id if isinstance(entry.id, int) else index
        if entry.id is None:
            original["entries"][index]["id"] = index  # §7.2: written back into the book
        comment = entry.comment or ""
        position = ext.get("position")
        if position is None:
            position = 0 if entry.position == "before_char" else 1
        item: dict[str, Any] = {
            "uid": uid,
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
        for wi_key, ext_key, default in _FROM_EXTENSIONS:
            item[wi_key] = _ext(ext, ext_key, default)
        # Key order as SillyTavern's conversion leaves it: the new-entry template's fields,
        # then `uid` and `displayIndex`, which the template lacks.
        order = [name for _, name in ENTRY_FIELDS if name not in _APPENDED] + [
            "uid",
            "displayIndex",
        ]
        ordered = {name: item[name] for name in order if name in item}
        entries[str(uid)] = ordered  # duplicate ids overwrite each other, as in SillyTavern
    name = book.name or f"{card_name}'s Lorebook"
    return world_info_from_json(
        {"entries": entries, "originalData": original}, name=name, file=file
    )


def lorebook_to_book(lorebook: Lorebook, *, file: str | None = None) -> CharacterBook:
    """The `character_book` SillyTavern writes into a card linked to `lorebook` (§7.3)."""
    raw = world_info_to_json(lorebook)["entries"]
    # JavaScript orders integer-like object keys ascending
    keys = sorted(raw, key=lambda k: (0, int(k)) if k.isdecimal() else (1, 0))
    entries = []
    for key in keys:
        wi = raw[key]
        ext: dict[str, Any] = {
            "position": wi.get("position"),
            "exclude_recursion": wi.get("excludeRecursion"),
            "display_index": wi.get("displayIndex"),
            "probability": wi.get("probability"),
            "useProbability": _coalesce(wi.get("useProbability"), False),
            "depth": wi.get("depth"),
            "selectiveLogic": wi.get("selectiveLogic"),
            "group": wi.get("group"),
            "group_override": wi.get("groupOverride"),
            "group_weight": wi.get("groupWeight"),
            "prevent_recursion": wi.get("preventRecursion"),
            "delay_until_recursion": wi.get("delayUntilRecursion"),
            "scan_depth": wi.get("scanDepth"),
            "match_whole_words": wi.get("matchWholeWords"),
            "use_group_scoring": _coalesce(wi.get("useGroupScoring"), False),
            "case_sensitive": wi.get("caseSensitive"),
            "automation_id": wi.get("automationId"),
            "role": wi.get("role"),
            "vectorized": wi.get("vectorized"),
            "sticky": wi.get("sticky"),
            "cooldown": wi.get("cooldown"),
            "delay": wi.get("delay"),
        }
        # JSON.stringify drops undefined values: fields absent from the entry stay out
        present = {
            "exclude_recursion": "excludeRecursion",
            "display_index": "displayIndex",
            "depth": "depth",
            "selectiveLogic": "selectiveLogic",
            "group": "group",
            "group_override": "groupOverride",
            "group_weight": "groupWeight",
            "prevent_recursion": "preventRecursion",
            "delay_until_recursion": "delayUntilRecursion",
            "scan_depth": "scanDepth",
            "match_whole_words": "matchWholeWords",
            "case_sensitive": "caseSensitive",
            "automation_id": "automationId",
            "role": "role",
            "vectorized": "vectorized",
            "sticky": "sticky",
            "cooldown": "cooldown",
            "delay": "delay",
            "position": "position",
        }
        for ext_key, wi_key in present.items():
            if wi_key not in wi:
                ext.pop(ext_key)
        entry: dict[str, Any] = {
            "id": wi.get("uid"),
            "keys": wi.get("key", []),
            "secondary_keys": wi.get("keysecondary", []),
            "comment": wi.get("comment", ""),
            "content": wi.get("content", ""),
            "constant": wi.get("constant", False),
            "selective": wi.get("selective", False),
            "insertion_order": wi.get("order", 100),
            "enabled": not wi.get("disable", False),
            "position": "before_char" if wi.get("position") == 0 else "after_char",
            "use_regex": True,
            "extensions": ext,
        }
        entries.append(entry)
    return validate(CharacterBook, {"entries": entries, "name": lorebook.name}, file=file)
