"""The library's items as the files SillyTavern reads, and pictures as the PNG they are kept
as: what the shells send for a download or take from an upload, without the formats."""

from __future__ import annotations

from taverna.errors import FormatError
from taverna.formats import json_text
from taverna.formats.card_json import card_from_json, write_card_json
from taverna.formats.detect import FileKind, detect
from taverna.formats.png_card import as_png, write_png_card
from taverna.model.character import CardFile, Character
from taverna.services.library import prompt_manager
from taverna.store.repository import Document


def character_of(doc: Document) -> Character:
    """The character a stored card holds."""
    return card_from_json(dict(doc.data), file=doc.name)


def card_json_file(card: CardFile) -> bytes:
    """A JSON card file as SillyTavern exports it."""
    return write_card_json(card.character)


def card_png_file(card: CardFile) -> bytes:
    """A PNG card file: the card's picture (or a plain one) with the card in its chunks."""
    return write_png_card(card.character, card.avatar)


def document_json_file(doc: Document) -> bytes:
    """A stored document (lorebook, preset, template) as the JSON file SillyTavern writes:
    4-space indentation."""
    return json_text.dumps(dict(doc.data), indent=4).encode("utf-8")


def picture_png(data: bytes, name: str | None) -> bytes:
    """An uploaded picture as PNG bytes (PNG unchanged, anything Pillow reads converted)."""
    return as_png(data, file=name)


def require_preset_file(data: bytes, name: str, kind: str) -> None:
    """Refuse a file that is not a preset of the page's `kind` ("text", "chat", "instruct",
    "context", "sysprompt")."""
    wanted = FileKind.TEXT_COMPLETION_PRESET if kind == "text" else prompt_manager.FILE_KINDS[kind]
    if detect(data, name) is not wanted:
        raise FormatError(
            f"this file is not a {kind} preset",
            file=name,
            code="this_file_is_not_preset",
            params={"kind": str(kind)},
        )
