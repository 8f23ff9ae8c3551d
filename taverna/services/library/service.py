"""The library: characters, lorebooks, presets, templates, personas, regex scripts, quick
replies and groups in the store (importing SillyTavern's files and folders into it is
`interchange/library_import.py`).

Each item is a store document holding SillyTavern's own JSON (so it exports unchanged) and,
for characters and personas, the avatar picture as its blob. Importing an item whose kind
and name are already in the library replaces it (a new revision), so importing twice does
not make copies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import PurePath
from typing import Any

from taverna.errors import FormatError, FormatWarning, NotFound
from taverna.formats.card_json import card_from_json, card_to_json
from taverna.formats.detect import LOREBOOK_KINDS, FileKind, read_any
from taverna.formats.presets import named_on_import
from taverna.formats.validation import validate
from taverna.formats.world_info import world_info_from_json, world_info_to_json
from taverna.model.character import CardFile
from taverna.model.lorebook import Lorebook
from taverna.model.persona import Persona
from taverna.model.presets import (
    ChatCompletionPreset,
    ContextTemplate,
    InstructTemplate,
    ReasoningTemplate,
    SystemPromptPreset,
    TextCompletionPreset,
)
from taverna.model.quick_reply import LegacyQuickReplySet, QuickReplySet
from taverna.model.regex_script import RegexScript
from taverna.store.repository import UNSET, Document, Store


@dataclass(frozen=True)
class StoredItem:
    """One thing an import put in the library, and the values of its file that were read
    otherwise than written (SillyTavern's loose values, formats/coercion.py)."""

    kind: str
    id: str
    name: str
    replaced: bool = False
    file: str = ""
    warnings: tuple[FormatWarning, ...] = ()


class LibraryKind(StrEnum):
    """The kinds of library document."""

    CHARACTER = "character"
    LOREBOOK = "lorebook"
    CHAT_COMPLETION_PRESET = "chat_completion_preset"
    TEXT_COMPLETION_PRESET = "text_completion_preset"
    INSTRUCT_TEMPLATE = "instruct_template"
    CONTEXT_TEMPLATE = "context_template"
    SYSTEM_PROMPT = "system_prompt"
    PERSONA = "persona"
    REGEX_SCRIPT = "regex_script"
    QUICK_REPLY_SET = "quick_reply_set"
    GROUP = "group"
    REASONING_TEMPLATE = "reasoning_template"


_MODELS: dict[LibraryKind, type[Any]] = {
    LibraryKind.CHAT_COMPLETION_PRESET: ChatCompletionPreset,
    LibraryKind.TEXT_COMPLETION_PRESET: TextCompletionPreset,
    LibraryKind.INSTRUCT_TEMPLATE: InstructTemplate,
    LibraryKind.CONTEXT_TEMPLATE: ContextTemplate,
    LibraryKind.SYSTEM_PROMPT: SystemPromptPreset,
    LibraryKind.REGEX_SCRIPT: RegexScript,
    LibraryKind.PERSONA: Persona,
    LibraryKind.REASONING_TEMPLATE: ReasoningTemplate,
}

_FILE_KINDS: dict[FileKind, LibraryKind] = {
    FileKind.CARD_PNG: LibraryKind.CHARACTER,
    FileKind.CARD_JSON: LibraryKind.CHARACTER,
    FileKind.CARD_CHARX: LibraryKind.CHARACTER,
    **dict.fromkeys(LOREBOOK_KINDS, LibraryKind.LOREBOOK),
    FileKind.CHAT_COMPLETION_PRESET: LibraryKind.CHAT_COMPLETION_PRESET,
    FileKind.TEXT_COMPLETION_PRESET: LibraryKind.TEXT_COMPLETION_PRESET,
    FileKind.INSTRUCT_TEMPLATE: LibraryKind.INSTRUCT_TEMPLATE,
    FileKind.CONTEXT_TEMPLATE: LibraryKind.CONTEXT_TEMPLATE,
    FileKind.SYSTEM_PROMPT: LibraryKind.SYSTEM_PROMPT,
    FileKind.REGEX_SCRIPT: LibraryKind.REGEX_SCRIPT,
    FileKind.QUICK_REPLY_SET: LibraryKind.QUICK_REPLY_SET,
    FileKind.GROUP: LibraryKind.GROUP,
    FileKind.REASONING_TEMPLATE: LibraryKind.REASONING_TEMPLATE,
}


class LibraryService:
    """Stores and reads library items, and stores one file read of any item kind."""

    def __init__(self, store: Store, *, owner: str = "") -> None:
        self.store = store
        self.owner = owner

    # ------------------------------------------------------------- storing

    def put(
        self,
        kind: LibraryKind,
        name: str,
        data: Mapping[str, Any],
        *,
        blob: bytes | None = None,
        file: str = "",
    ) -> StoredItem:
        """Store an item, replacing the one of the same kind and name if there is one."""
        existing = self.store.find_documents(kind.value, name=name, owner=self.owner)
        if existing:
            old = existing[-1]
            # A file without a picture (a JSON card) keeps the picture stored before.
            doc = self.store.put_document(
                kind.value,
                name,
                data,
                blob=UNSET if blob is None else blob,
                id=old.id,
                revision=old.revision,
                owner=self.owner,
            )
            return StoredItem(kind.value, doc.id, name, replaced=True, file=file)
        doc = self.store.put_document(kind.value, name, data, blob=blob, owner=self.owner)
        return StoredItem(kind.value, doc.id, name, file=file)

    def put_character(self, card: CardFile, *, file: str = "") -> StoredItem:
        """A character card with its avatar picture."""
        name = card.character.name or PurePath(file).stem or "Unnamed"
        return self.put(
            LibraryKind.CHARACTER, name, card_to_json(card.character), blob=card.avatar, file=file
        )

    def put_lorebook(self, book: Lorebook, *, file: str = "") -> StoredItem:
        return self.put(LibraryKind.LOREBOOK, book.name, world_info_to_json(book), file=file)

    def put_persona(self, persona: Persona, *, avatar: bytes | None = None) -> StoredItem:
        name = persona.name or persona.avatar
        return self.put(LibraryKind.PERSONA, name, persona.to_json(), blob=avatar)

    def keep_one_default_persona(self, default_id: str) -> None:
        """One persona is the default: every other one marked so loses the mark."""
        for doc in self.documents(LibraryKind.PERSONA):
            other = Persona.model_validate(dict(doc.data))
            if doc.id != default_id and other.is_default:
                self.store.put_document(
                    doc.kind,
                    doc.name,
                    other.model_copy(update={"is_default": False}).to_json(),
                    id=doc.id,
                    revision=doc.revision,
                    owner=doc.owner,
                )

    def rewrite(
        self,
        doc: Document,
        data: Mapping[str, Any],
        *,
        name: str | None = None,
        revision: int | None = None,
        blob: bytes | None = UNSET,
    ) -> Document:
        """Store a new version of an item read before (same kind, id and owner; its name
        and picture kept unless given). `revision` (default: the one read) refuses the
        write when the item changed since."""
        return self.store.put_document(
            doc.kind,
            doc.name if name is None else name,
            data,
            blob=blob,
            id=doc.id,
            revision=doc.revision if revision is None else revision,
            owner=doc.owner,
        )

    def delete(self, kind: LibraryKind, id: str) -> None:
        """Remove an item of a kind (NotFound for another kind or another account's)."""
        doc = self.get(kind, id)
        self.store.delete_document(doc.id, revision=doc.revision)

    # ------------------------------------------------------------- reading

    def documents(self, kind: LibraryKind) -> list[Document]:
        """The items of a kind, oldest first (without blobs)."""
        return self.store.find_documents(kind.value, owner=self.owner)

    def get(self, kind: LibraryKind, id: str) -> Document:
        doc = self.store.get_document(id)
        if doc.kind != kind.value or doc.owner != self.owner:
            raise NotFound(
                f"no {kind.value} with id {id}",
                field="id",
                code="no_with_id",
                params={"value": str(kind.value), "id": str(id)},
            )
        return doc

    def get_any(self, id: str, kinds: Iterable[LibraryKind]) -> Document:
        """An item of one of these kinds, by id (NotFound for any other document)."""
        doc = self.store.get_document(id)
        if doc.kind not in {kind.value for kind in kinds} or doc.owner != self.owner:
            raise NotFound(
                f"no item with id {id}", field="id", code="no_item_with_id", params={"id": str(id)}
            )
        return doc

    def find(self, kind: LibraryKind, name: str) -> Document | None:
        """The item of a kind with that name, if any."""
        docs = self.store.find_documents(kind.value, name=name, owner=self.owner, with_blobs=True)
        return docs[-1] if docs else None

    def character(self, id: str) -> CardFile:
        """A stored character as a card with its avatar."""
        doc = self.get(LibraryKind.CHARACTER, id)
        return CardFile(character=card_from_json(dict(doc.data), file=doc.name), avatar=doc.blob)

    def lorebook(self, id: str) -> Lorebook:
        doc = self.get(LibraryKind.LOREBOOK, id)
        return world_info_from_json(dict(doc.data), name=doc.name, file=doc.name)

    def item(self, kind: LibraryKind, id: str) -> Any:
        """A stored preset, template, persona or regex script as its model."""
        doc = self.get(kind, id)
        if kind is LibraryKind.CHARACTER:
            return self.character(id)
        if kind is LibraryKind.LOREBOOK:
            return self.lorebook(id)
        if kind is LibraryKind.QUICK_REPLY_SET:
            data = dict(doc.data)
            if data.get("version") == 2 or "qrList" in data:
                return validate(QuickReplySet, data, file=doc.name)
            return validate(LegacyQuickReplySet, data, file=doc.name)
        if kind is LibraryKind.GROUP:
            return dict(doc.data)
        return validate(_MODELS[kind], dict(doc.data), file=doc.name)

    def import_bytes(self, data: bytes, file_name: str, *, file: str = "") -> StoredItem:
        """Store one uploaded file that is not a chat (cards, lorebooks, presets, ...)."""
        source = file or file_name
        document = read_any(data, file_name)
        kind = _FILE_KINDS.get(document.kind)
        if kind is None:
            raise FormatError(
                f"a {document.kind.value} file is not stored in the library this way",
                file=source,
                code="file_is_not_stored_in",
                params={"value": str(document.kind.value)},
            )
        item = self._store_read(kind, document.value, file_name, source)
        # named by the path the import was given, not just the file name
        named = tuple(w._replace(file=source) for w in document.warnings)
        return dataclasses.replace(item, warnings=named)

    def _store_read(self, kind: LibraryKind, value: Any, file_name: str, source: str) -> StoredItem:
        stem = PurePath(file_name).stem or "Imported"
        if kind is LibraryKind.CHARACTER:
            return self.put_character(value, file=source)
        if kind is LibraryKind.LOREBOOK:
            return self.put_lorebook(value, file=source)
        if kind is LibraryKind.GROUP:
            name = str(value.get("name") or value.get("id") or stem)
            return self.put(kind, name, value, file=source)
        if kind in (
            LibraryKind.INSTRUCT_TEMPLATE,
            LibraryKind.CONTEXT_TEMPLATE,
            LibraryKind.SYSTEM_PROMPT,
        ):
            value = named_on_import(value, file_name)
            return self.put(kind, value.name or stem, value.to_json(), file=source)
        if kind is LibraryKind.REGEX_SCRIPT:
            return self.put(kind, value.script_name or stem, value.to_json(), file=source)
        # Presets and quick reply sets are named by their file.
        name = str(getattr(value, "name", "") or stem)
        return self.put(kind, name, value.to_json(), file=source)

    # ------------------------------------------------------------- a whole data folder


__all__ = [
    "LibraryKind",
    "LibraryService",
    "StoredItem",
]
