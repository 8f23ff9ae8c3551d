"""Library use cases the page needs beyond what the library service offers: creating and
editing a character from the editor's fields, linking its lorebook, and file naming.

Each calls the library service and the store only; each could move into the library
service unchanged.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote
from xml.sax.saxutils import escape

from taverna.errors import Conflict, FormatError, NotFound, TavernaError
from taverna.formats.card_json import card_to_json
from taverna.formats.detect import FileKind, detect
from taverna.formats.world_info import world_info_from_json, world_info_to_json
from taverna.model.character import CardFile, Character
from taverna.model.lorebook import Entry, Lorebook
from taverna.model.persona import Persona, PersonaDescriptor
from taverna.server.cards import CharacterFields, CharacterOut, apply_fields, character_out
from taverna.server.schemas import LorebookOut, PersonaIn
from taverna.services.library import LibraryKind, LibraryService, StoredItem

CARD_KINDS = (FileKind.CARD_PNG, FileKind.CARD_JSON, FileKind.CARD_CHARX)


def lorebook_name(lib: LibraryService, lorebook_id: str | None) -> str | None:
    if not lorebook_id:
        return None
    return lib.get(LibraryKind.LOREBOOK, lorebook_id).name


def character_view(lib: LibraryService, character_id: str) -> CharacterOut:
    doc = lib.get(LibraryKind.CHARACTER, character_id)
    card = lib.character(character_id)
    world = card.character.linked_world
    book = lib.find(LibraryKind.LOREBOOK, world) if world else None
    return character_out(
        doc.id, doc.revision, card.character, lorebook_id=book.id if book else None
    )


def _refuse_taken_name(lib: LibraryService, name: str, own_id: str | None) -> None:
    other = lib.find(LibraryKind.CHARACTER, name)
    if other is not None and other.id != own_id:
        raise Conflict(f"a character named {name!r} exists already", field="name")


def import_card(lib: LibraryService, data: bytes, file_name: str) -> StoredItem:
    """Store an uploaded card file; a file that is no card is refused before anything is stored."""
    kind = detect(data, file_name)
    if kind not in CARD_KINDS:
        raise FormatError(f"this is a {kind.value} file, not a character card", file=file_name)
    return lib.import_bytes(data, file_name)


def create_character(lib: LibraryService, fields: CharacterFields) -> str:
    _refuse_taken_name(lib, fields.name, None)
    character = apply_fields(
        Character.create(fields.name), fields, world=lorebook_name(lib, fields.lorebook_id)
    )
    return lib.put_character(CardFile(character=character)).id


def update_character(
    lib: LibraryService, character_id: str, fields: CharacterFields, *, revision: int | None
) -> None:
    doc = lib.get(LibraryKind.CHARACTER, character_id)
    _refuse_taken_name(lib, fields.name, doc.id)
    card = lib.character(character_id)
    character = apply_fields(card.character, fields, world=lorebook_name(lib, fields.lorebook_id))
    lib.store.put_document(
        doc.kind,
        character.name,
        card_to_json(character),
        id=doc.id,
        revision=doc.revision if revision is None else revision,
        owner=doc.owner,
    )


def link_lorebook(lib: LibraryService, character_id: str, lorebook_id: str | None) -> None:
    """Link a library lorebook to a character (by name, as a card links it), or unlink."""
    doc = lib.get(LibraryKind.CHARACTER, character_id)
    card = lib.character(character_id)
    data = card.character.to_json()
    extensions = dict(data.get("extensions") or {})
    extensions["world"] = lorebook_name(lib, lorebook_id) or ""
    data["extensions"] = extensions
    character = Character.model_validate(data)
    lib.store.put_document(
        doc.kind,
        doc.name,
        card_to_json(character),
        id=doc.id,
        revision=doc.revision,
        owner=doc.owner,
    )


def placeholder_svg(name: str) -> bytes:
    """A round picture with the name's first letter, for a character without one."""
    letter = escape(name.strip()[:1].upper() or "?")
    hue = sum(ord(c) for c in name) % 360
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100">'
        f'<rect width="100" height="100" fill="hsl({hue},45%,45%)"/>'
        '<text x="50" y="50" dy=".35em" text-anchor="middle" font-family="sans-serif" '
        f'font-size="52" fill="#fff">{letter}</text></svg>'
    ).encode()


def download_name(name: str) -> str:
    """A file name stem safe on every system (non-ASCII kept, separators removed)."""
    cleaned = unicodedata.normalize("NFC", name)
    cleaned = re.sub(r'[\\/:*?"<>|\x00-\x1f]', "_", cleaned).strip(" .") or "character"
    return cleaned[:120]


def attachment(file_name: str) -> dict[str, str]:
    ascii_name = file_name.encode("ascii", "replace").decode().replace("?", "_").replace('"', "_")
    return {
        "Content-Disposition": f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(file_name)}"
    }


# ------------------------------------------------------------------ lorebooks

LOREBOOK_KINDS = (FileKind.WORLD_INFO, FileKind.LOREBOOK_V3)
ENTRY_LIMIT = 100_000


def import_lorebook(lib: LibraryService, data: bytes, file_name: str) -> StoredItem:
    kind = detect(data, file_name)
    if kind not in LOREBOOK_KINDS:
        raise FormatError(f"this is a {kind.value} file, not a lorebook", file=file_name)
    return lib.import_bytes(data, file_name)


def create_lorebook(lib: LibraryService, name: str) -> str:
    name = name.strip()
    if lib.find(LibraryKind.LOREBOOK, name) is not None:
        raise Conflict(f"a lorebook named {name!r} exists already", field="name")
    return lib.put_lorebook(Lorebook(name=name)).id


def lorebook_view(lib: LibraryService, lorebook_id: str) -> LorebookOut:
    doc = lib.get(LibraryKind.LOREBOOK, lorebook_id)
    raw = doc.data.get("entries") or {}
    entries = [dict(value) for value in raw.values()] if isinstance(raw, dict) else []
    entries.sort(key=lambda e: (e.get("displayIndex") or 0, e.get("uid") or 0))
    return LorebookOut(id=doc.id, name=doc.name, revision=doc.revision, entries=entries)


def _write_book(lib: LibraryService, lorebook_id: str, data: dict[str, Any]) -> None:
    """Check a changed world file by reading it as a lorebook, then store it."""
    doc = lib.get(LibraryKind.LOREBOOK, lorebook_id)
    book = world_info_from_json(data, name=doc.name, file=doc.name)
    lib.store.put_document(
        doc.kind,
        doc.name,
        world_info_to_json(book),
        id=doc.id,
        revision=doc.revision,
        owner=doc.owner,
    )


def add_entry(lib: LibraryService, lorebook_id: str) -> int:
    book = lib.lorebook(lorebook_id)
    if len(book.entries) >= ENTRY_LIMIT:
        raise TavernaError(f"a lorebook holds at most {ENTRY_LIMIT} entries", field="entries")
    uid = book.free_uid()
    entry = Entry(uid=uid, display_index=uid)
    grown = Lorebook(
        name=book.name,
        entries=(*book.entries, entry),
        extras=book.extras,
        field_order=book.field_order,
    )
    _write_book(lib, lorebook_id, world_info_to_json(grown))
    return uid


def replace_entry(
    lib: LibraryService, lorebook_id: str, uid: int, entry: Mapping[str, Any] | None
) -> None:
    """Replace entry `uid` with `entry` (SillyTavern's fields), or remove it when None."""
    doc = lib.get(LibraryKind.LOREBOOK, lorebook_id)
    data = dict(doc.data)
    entries = dict(data.get("entries") or {})
    key = next(
        (k for k, v in entries.items() if isinstance(v, Mapping) and v.get("uid") == uid), None
    )
    if key is None:
        raise NotFound(f"no entry {uid} in this lorebook", field="uid")
    if entry is None:
        del entries[key]
    else:
        entries[key] = {**entry, "uid": uid}
    data["entries"] = entries
    _write_book(lib, lorebook_id, data)


# ----------------------------------------------------------------- personas


def all_personas(lib: LibraryService) -> list[tuple[str, Persona]]:
    return [
        (d.id, Persona.model_validate(dict(d.data))) for d in lib.documents(LibraryKind.PERSONA)
    ]


def save_persona(lib: LibraryService, body: PersonaIn, doc_id: str | None) -> str:
    """Create or change a persona; a name is used once, and one persona is the default."""
    existing = dict(all_personas(lib))
    for other_id, other in existing.items():
        if other.name == body.name and other_id != doc_id:
            raise Conflict(f"a persona named {body.name!r} exists already", field="name")
    old = existing.get(doc_id) if doc_id else None
    persona = Persona(
        avatar=old.avatar if old else f"{body.name}.png",
        name=body.name,
        descriptor=PersonaDescriptor(
            description=body.description, position=body.position, depth=body.depth, role=body.role
        ),
        is_default=body.is_default,
    )
    if doc_id:
        doc = lib.get(LibraryKind.PERSONA, doc_id)
        saved = lib.store.put_document(
            doc.kind,
            body.name,
            persona.to_json(),
            id=doc.id,
            revision=doc.revision,
            owner=doc.owner,
        ).id
    else:
        saved = lib.put_persona(persona).id
    if body.is_default:
        # One default persona: the others lose the mark.
        for other_id, other in all_personas(lib):
            if other_id != saved and other.is_default:
                doc = lib.get(LibraryKind.PERSONA, other_id)
                lib.store.put_document(
                    doc.kind,
                    doc.name,
                    other.model_copy(update={"is_default": False}).to_json(),
                    id=doc.id,
                    revision=doc.revision,
                    owner=doc.owner,
                )
    return saved
