"""What a lorebook scan is given besides its settings: books in play, messages, the character."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from taverna.model.lorebook import Lorebook


class BookSource(StrEnum):
    """Why a lorebook is in play; decides its place in the scan order (§1)."""

    GLOBAL = "global"
    CHARACTER = "character"  # linked to the character (its primary or an additional book)
    EMBEDDED = "embedded"  # the card's own `character_book`, scanned as character lore
    CHAT = "chat"
    PERSONA = "persona"


@dataclass(frozen=True, slots=True)
class BookInPlay:
    """A lorebook and the link that brought it into this turn."""

    book: Lorebook
    source: BookSource


@dataclass(frozen=True, slots=True)
class ScanMessage:
    """One visible chat message as the scan sees it.

    `name` is prefixed (`Name: text`) when the settings include names; None means the
    text is already in its scanned form.
    """

    text: str
    name: str | None = ""


@dataclass(frozen=True, slots=True)
class CharacterIdentity:
    """The character the turn is for, as character filters name it.

    `file_name` is the avatar file stem; `tags` are tag ids, or None when the character
    has no tag list (then tag filters are not applied, as in SillyTavern).
    """

    file_name: str = ""
    tags: tuple[str, ...] | None = None
