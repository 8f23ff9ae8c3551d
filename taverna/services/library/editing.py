"""Editing the library from the page's editors: a character from its fields, a lorebook's
entries, a persona; each checked and stored through the library service."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from taverna.errors import Conflict, FormatError, FormatWarning, NotFound, TavernaError
from taverna.formats.card_json import card_to_json, with_fields
from taverna.formats.character_book import book_to_lorebook
from taverna.formats.detect import LOREBOOK_KINDS, FileKind, detect
from taverna.formats.world_info import world_info_from_json, world_info_to_json
from taverna.model.character import CardFile, Character
from taverna.model.lorebook import Entry, Lorebook
from taverna.model.persona import Persona, PersonaDescriptor
from taverna.services.library.service import LibraryKind, LibraryService, StoredItem

CARD_KINDS = (FileKind.CARD_PNG, FileKind.CARD_JSON, FileKind.CARD_CHARX)
ENTRY_LIMIT = 100_000


class PersonaFields(Protocol):
    """What the persona editor sends."""

    name: str
    description: str
    position: int
    depth: int
    role: int
    is_default: bool


def lorebook_name(lib: LibraryService, lorebook_id: str | None) -> str | None:
    if not lorebook_id:
        return None
    return lib.get(LibraryKind.LOREBOOK, lorebook_id).name


def _refuse_taken_name(lib: LibraryService, name: str, own_id: str | None) -> None:
    other = lib.find(LibraryKind.CHARACTER, name)
    if other is not None and other.id != own_id:
        raise Conflict(
            f"a character named {name!r} exists already",
            field="name",
            code="name_taken",
            params={"name": name},
        )


def import_card(lib: LibraryService, data: bytes, file_name: str) -> StoredItem:
    """Store an uploaded card file; a file that is no card is refused before anything is stored."""
    kind = detect(data, file_name)
    if kind not in CARD_KINDS:
        raise FormatError(
            f"this is a {kind.value} file, not a character card",
            file=file_name,
            code="this_is_file_not_character",
            params={"value": str(kind.value)},
        )
    return lib.import_bytes(data, file_name)


def create_character(lib: LibraryService, fields: Mapping[str, Any]) -> str:
    """Store a new character made from the editor's fields."""
    _refuse_taken_name(lib, fields["name"], None)
    character = apply_fields(
        Character.create(fields["name"]),
        fields,
        world=lorebook_name(lib, fields.get("lorebook_id")),
    )
    return lib.put_character(CardFile(character=character)).id


def update_character(
    lib: LibraryService, character_id: str, fields: Mapping[str, Any], *, revision: int | None
) -> None:
    doc = lib.get(LibraryKind.CHARACTER, character_id)
    _refuse_taken_name(lib, fields["name"], doc.id)
    card = lib.character(character_id)
    character = apply_fields(
        card.character, fields, world=lorebook_name(lib, fields.get("lorebook_id"))
    )
    lib.store.put_document(
        doc.kind,
        character.name,
        card_to_json(character),
        id=doc.id,
        revision=doc.revision if revision is None else revision,
        owner=doc.owner,
    )


def set_marks(
    lib: LibraryService,
    character_id: str,
    *,
    favorite: bool | None = None,
    tags: Sequence[str] | None = None,
) -> None:
    """Mark a character as a favourite or not, and set its tags (each trimmed, blanks and
    repeats dropped); None keeps what the card has."""
    doc = lib.get(LibraryKind.CHARACTER, character_id)
    character = lib.character(character_id).character
    fields: dict[str, Any] = {}
    if tags is not None:
        fields["tags"] = list(dict.fromkeys(tag.strip() for tag in tags if tag.strip()))
    if favorite is not None:
        fields["extensions"] = {**character.extensions.to_json(), "fav": favorite}
    if not fields:
        return
    changed = with_fields(character, **fields)
    lib.store.put_document(
        doc.kind, doc.name, card_to_json(changed), id=doc.id, revision=doc.revision, owner=doc.owner
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


def import_card_lorebook(lib: LibraryService, character_id: str) -> StoredItem:
    """SillyTavern's "Import Card Lore" (formats-character-card.md §7.2): the card's embedded
    book stored as a lorebook of its own (its name, else "<card name>'s Lorebook"; one of
    that name is replaced, as SillyTavern overwrites the world file) and linked to the card."""
    card = lib.character(character_id).character
    if card.character_book is None:
        raise NotFound(
            f"{card.name}'s card has no embedded lorebook",
            field="character_book",
            code="named_card_has_no_lorebook",
            params={"name": str(card.name)},
        )
    item = lib.put_lorebook(book_to_lorebook(card.character_book, card_name=card.name))
    link_lorebook(lib, character_id, item.id)
    return item


def replace_picture(lib: LibraryService, kind: LibraryKind, doc_id: str, picture: bytes) -> None:
    """Store `picture` as an item's picture (a character's avatar, a persona's), keeping
    its name and data."""
    doc = lib.get(kind, doc_id)
    lib.rewrite(doc, doc.data, blob=picture)


def apply_fields(character: Character, edit: Mapping[str, Any], *, world: str | None) -> Character:
    """`character` with the editor's fields written in; fields the editor lacks are kept."""
    data: dict[str, Any] = character.to_json()
    for key in (
        "name",
        "description",
        "personality",
        "scenario",
        "first_mes",
        "alternate_greetings",
        "mes_example",
        "system_prompt",
        "post_history_instructions",
        "creator_notes",
        "creator",
        "character_version",
        "tags",
    ):
        data[key] = edit.get(key, data.get(key))
    # V3-only fields are written when the card has them or the editor filled them, so an
    # untouched V2 card exports as it came in.
    for key, value in (
        ("nickname", edit.get("nickname") or None),
        ("group_only_greetings", edit.get("group_only_greetings") or []),
    ):
        if key in data or value:
            data[key] = value
    extensions = dict(data.get("extensions") or {})
    old_note = dict(extensions.get("depth_prompt") or {})
    extensions["depth_prompt"] = {
        **old_note,
        "prompt": edit.get("depth_prompt", old_note.get("prompt", "")),
        "depth": edit.get("depth_prompt_depth")
        if edit.get("depth_prompt_depth") is not None
        else old_note.get("depth", 4),
        "role": edit.get("depth_prompt_role") or old_note.get("role", "system"),
    }
    if edit.get("favorite") is not None:
        extensions["fav"] = bool(edit["favorite"])
    if edit.get("talkativeness") is not None:
        # SillyTavern stores talkativeness as a string (formats-character-card.md).
        extensions["talkativeness"] = str(edit["talkativeness"])
    extensions["world"] = world or ""
    data["extensions"] = extensions
    return Character.model_validate(data)


# ------------------------------------------------------------------ lorebooks


def import_lorebook(lib: LibraryService, data: bytes, file_name: str) -> StoredItem:
    kind = detect(data, file_name)
    if kind not in LOREBOOK_KINDS:
        raise FormatError(
            f"this is a {kind.value} file, not a lorebook",
            file=file_name,
            code="this_is_file_not_lorebook",
            params={"value": str(kind.value)},
        )
    return lib.import_bytes(data, file_name)


def create_lorebook(lib: LibraryService, name: str) -> str:
    name = name.strip()
    if lib.find(LibraryKind.LOREBOOK, name) is not None:
        raise Conflict(
            f"a lorebook named {name!r} exists already",
            field="name",
            code="name_taken",
            params={"name": name},
        )
    return lib.put_lorebook(Lorebook(name=name)).id


def _write_book(lib: LibraryService, lorebook_id: str, data: dict[str, Any]) -> None:
    """Check a changed world file by reading it as a lorebook, then store it.

    An edit sends each field in its own type: a value a SillyTavern file could get away
    with (a number as text, a lone key) is refused here, naming the field.
    """
    doc = lib.get(LibraryKind.LOREBOOK, lorebook_id)
    loose: list[FormatWarning] = []
    book = world_info_from_json(data, name=doc.name, file=doc.name, warnings=loose)
    if loose:
        first = loose[0]
        raise FormatError(
            f"not of the field's type: {first.message}",
            field=first.field,
            code="not_of_field_s_type",
            params={"message_name": str(first.message)},
        )
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
        raise TavernaError(
            f"a lorebook holds at most {ENTRY_LIMIT} entries",
            field="entries",
            code="lorebook_holds_at_most_entries",
            params={"entry_limit": str(ENTRY_LIMIT)},
        )
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
        raise NotFound(
            f"no entry {uid} in this lorebook",
            field="uid",
            code="no_entry_in_this_lorebook",
            params={"uid": str(uid)},
        )
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


def chat_persona(lib: LibraryService, user_name: str) -> tuple[str, Persona] | None:
    """The persona a chat speaks as, with its id: the one named as the chat's user, else
    the default one (None: neither)."""
    return chosen_persona(all_personas(lib), user_name)


def chosen_persona(
    personas: Sequence[tuple[str, Persona]], user_name: str
) -> tuple[str, Persona] | None:
    """Of `personas` (with their ids, oldest first), the one named `user_name`, else the
    default one (None: neither)."""
    named = next(((i, p) for i, p in personas if user_name and p.name == user_name), None)
    return named or next(((i, p) for i, p in personas if p.is_default), None)


def save_persona(lib: LibraryService, body: PersonaFields, doc_id: str | None) -> str:
    """Create or change a persona; a name is used once, and one persona is the default."""
    existing = dict(all_personas(lib))
    for other_id, other in existing.items():
        if other.name == body.name and other_id != doc_id:
            raise Conflict(
                f"a persona named {body.name!r} exists already",
                field="name",
                code="name_taken",
                params={"name": body.name},
            )
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
        lib.keep_one_default_persona(saved)
    return saved
