"""A character's expression sprites: one picture per expression label (`joy`, `anger`...),
as SillyTavern keeps them in `characters/<card name>/<label>.png`.

The pictures are the library's (`pictures.py`); which label shows which picture is one
`sprites` document per character, named by the character's id, so a card's own file is not
touched. A label is any file stem a pack uses: mostly the 28 of the classifier
(`engine/expressions.py`), sometimes one of the pack's own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePath

from taverna.errors import TavernaError
from taverna.services.library.pictures import PictureStore
from taverna.services.library.service import LibraryService
from taverna.store import Store

SPRITES_KIND = "sprites"
SPRITE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
_LABEL = re.compile(r"^[\w\- ]{1,64}$")
_NUMBERED = re.compile(r"(?<=[a-z])-\d+$")


def sprite_label(file_name: str) -> str | None:
    """The label a sprite file stands for (`Joy.png` -> `joy`), None for another file.
    SillyTavern also takes `joy-2.png` as a second picture of `joy`: the first one is kept."""
    path = PurePath(file_name)
    if path.suffix.lower() not in SPRITE_SUFFIXES:
        return None
    label = _NUMBERED.sub("", path.stem.strip().lower())
    return label if _LABEL.match(label) else None


def checked_label(label: str) -> str:
    """A label as stored (lower case), or a TavernaError naming the field."""
    found = label.strip().lower()
    if not _LABEL.match(found):
        raise TavernaError(
            "an expression is named by letters, digits, - and _ (joy, anger, ...)",
            field="label",
            code="expression_label_invalid",
        )
    return found


class SpriteLibrary:
    """One account's characters' sprites."""

    def __init__(self, store: Store, *, owner: str = "") -> None:
        self.store = store
        self.owner = owner
        self.pictures = PictureStore(store, owner=owner)

    @classmethod
    def of(cls, lib: LibraryService) -> SpriteLibrary:
        """The same for the account whose library `lib` is."""
        return cls(lib.store, owner=lib.owner)

    def sprites(self, character_id: str) -> dict[str, str]:
        """A character's sprites: label -> picture URL."""
        found = self.store.find_documents(SPRITES_KIND, name=character_id, owner=self.owner)
        data = found[-1].data.get("sprites") if found else None
        return dict(data) if isinstance(data, Mapping) else {}

    def _write(self, character_id: str, sprites: Mapping[str, str]) -> None:
        found = self.store.find_documents(SPRITES_KIND, name=character_id, owner=self.owner)
        if not sprites:
            if found:
                self.store.delete_document(found[-1].id, revision=found[-1].revision)
            return
        self.store.put_document(
            SPRITES_KIND,
            character_id,
            {"sprites": dict(sorted(sprites.items()))},
            id=found[-1].id if found else None,
            revision=found[-1].revision if found else None,
            owner=self.owner,
        )

    def add(self, character_id: str, label: str, data: bytes, *, file: str) -> str:
        """Store a sprite for `label` (replacing the one it had); its picture URL."""
        name = checked_label(label)
        stored = self.pictures.save(data, file=file)
        self._write(character_id, {**self.sprites(character_id), name: stored.url})
        return stored.url

    def add_many(
        self, character_id: str, pictures: Mapping[str, bytes]
    ) -> list[tuple[str, TavernaError]]:
        """Store several sprites at once (label -> bytes); the labels whose pictures could
        not be stored, each with why (the others are kept)."""
        sprites = self.sprites(character_id)
        failed: list[tuple[str, TavernaError]] = []
        for label, data in pictures.items():
            try:
                sprites[checked_label(label)] = self.pictures.save(data, file=label).url
            except TavernaError as exc:
                failed.append((label, exc))
        if len(failed) < len(pictures):
            self._write(character_id, sprites)
        return failed

    def remove(self, character_id: str, label: str) -> None:
        sprites = self.sprites(character_id)
        sprites.pop(label.strip().lower(), None)
        self._write(character_id, sprites)
