"""SillyTavern's character tags from `settings.json`: its `tags` (each tag's id and name)
and `tag_map` (a character's avatar file name to the ids of its tags), written into the
cards' own `tags`, where taverna keeps them and a card export carries them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import PurePosixPath
from typing import Any

from taverna.services.library.editing import set_marks
from taverna.services.library.service import LibraryKind, LibraryService

# The library id of the character whose avatar file is named so, None when not stored.
FindCard = Callable[[str], str | None]


def tag_names(doc: Mapping[str, Any]) -> dict[str, list[str]]:
    """The tag names of each character (by avatar file name) that `settings.json` maps."""
    tags = doc.get("tags")
    mapping = doc.get("tag_map")
    if not isinstance(tags, list) or not isinstance(mapping, dict):
        return {}
    names = {
        str(tag["id"]): tag["name"].strip()
        for tag in tags
        if isinstance(tag, dict) and "id" in tag and isinstance(tag.get("name"), str)
    }
    out: dict[str, list[str]] = {}
    for avatar, ids in mapping.items():
        if not isinstance(avatar, str) or not isinstance(ids, list):
            continue
        found = [names[str(i)] for i in ids if str(i) in names and names[str(i)]]
        if found:
            out[avatar] = found
    return out


def apply_tag_map(lib: LibraryService, doc: Mapping[str, Any], find: FindCard | None = None) -> int:
    """Add the tags `settings.json` gives each stored character to its card (the card's
    own tags first, none twice); returns how many characters gained a tag. `find` names
    the character of an avatar file; by default the library's character of its stem."""

    def by_name(avatar: str) -> str | None:
        found = lib.find(LibraryKind.CHARACTER, PurePosixPath(avatar).stem)
        return found.id if found is not None else None

    look = find or by_name
    changed = 0
    for avatar, names in tag_names(doc).items():
        character_id = look(avatar)
        if character_id is None:
            continue
        had = list(lib.character(character_id).character.tags)
        wanted = list(dict.fromkeys([*had, *names]))
        if wanted != had:
            set_marks(lib, character_id, tags=wanted)
            changed += 1
    return changed
