"""The page's presets and templates: one by id, its edits, deleting it, and choosing the
one in use; each checked by the prompt manager and stored through the library service."""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib.resources import files
from typing import Any

from taverna.errors import Conflict, TavernaError
from taverna.services.library import prompt_manager
from taverna.services.library.active_settings import active_choices, set_active
from taverna.services.library.service import LibraryKind, LibraryService
from taverna.store.repository import Document

# The page's kinds of preset chosen for the next generations, with their key among the
# active choices (a system prompt preset is chosen inside the context template instead).
ACTIVE_KEY = {
    "chat": "chat_completion_preset",
    "text": "text_completion_preset",
    "instruct": "instruct_template",
    "context": "context_template",
}
# Text Completion presets are listed and chosen (their regex scripts run on a Text
# Completion connection) but not edited in the page.
CHOSEN_KINDS: dict[str, LibraryKind] = {
    **prompt_manager.KINDS,
    "text": LibraryKind.TEXT_COMPLETION_PRESET,
}


# The product's own preset or template each page kind starts from (taverna/data/presets).
DEFAULT_FILES = {
    "chat": "Taverna Default.json",
    "instruct": "ChatML.json",
    "context": "Taverna Story.json",
    "sysprompt": "Taverna Roleplay.json",
}


def library_kind(kind: str) -> LibraryKind:
    """The library kind of a page kind ("chat", "instruct", "context", "sysprompt")."""
    if kind not in prompt_manager.KINDS:
        raise TavernaError(
            f"kind must be one of {', '.join(prompt_manager.KINDS)}",
            field="kind",
            code="kind_must_be_one_of",
            params={"kinds": str(", ".join(prompt_manager.KINDS))},
        )
    return prompt_manager.KINDS[kind]


def listed_kind(kind: str) -> LibraryKind:
    """The library kind of a kind the page lists and chooses (the page kinds, and "text")."""
    if kind not in CHOSEN_KINDS:
        raise TavernaError(
            f"kind must be one of {', '.join(CHOSEN_KINDS)}",
            field="kind",
            code="kind_must_be_one_of_2",
            params={"chosen_kinds": str(", ".join(CHOSEN_KINDS))},
        )
    return CHOSEN_KINDS[kind]


def chosen_preset(lib: LibraryService, preset_id: str) -> Document:
    """A preset or template of a kind the page lists (Text Completion presets too), by id."""
    return lib.get_any(preset_id, CHOSEN_KINDS.values())


def page_kind(doc: Document) -> str:
    """The page's name for the kind of a preset or template."""
    return next(name for name, kind in CHOSEN_KINDS.items() if kind.value == doc.kind)


def get_preset(lib: LibraryService, preset_id: str) -> Document:
    """A preset or template of the account, by id (NotFound for any other document)."""
    return lib.get_any(preset_id, prompt_manager.KINDS.values())


def chat_preset(lib: LibraryService, preset_id: str) -> Document:
    """A chat completion preset (the one kind with prompt slots), by id."""
    doc = get_preset(lib, preset_id)
    if doc.kind != LibraryKind.CHAT_COMPLETION_PRESET.value:
        raise TavernaError(
            "only a chat completion preset has prompt slots",
            field="preset_id",
            code="prompt_slots_need_chat_preset",
        )
    return doc


def active_ids(lib: LibraryService) -> set[str]:
    """The ids of the presets and templates in use."""
    return set(active_choices(lib.store, lib.owner).values())


def add_slot(
    lib: LibraryService,
    preset_id: str,
    identifier: str,
    slot: Mapping[str, Any],
    *,
    enabled: bool,
    revision: int | None,
) -> None:
    """Add a custom prompt slot `identifier`, last in the prompt order."""
    doc = chat_preset(lib, preset_id)
    data = prompt_manager.add_slot(doc.data, identifier, dict(slot), enabled=enabled)
    _save(lib, doc, data, revision=revision)


def delete_slot(lib: LibraryService, preset_id: str, identifier: str) -> None:
    """Delete a custom prompt slot; markers and SillyTavern's own slots are refused."""
    doc = chat_preset(lib, preset_id)
    _save(lib, doc, prompt_manager.delete_slot(doc.data, identifier), revision=None)


def update_preset(
    lib: LibraryService,
    preset_id: str,
    *,
    name: str,
    prompts: list[dict[str, Any]] | None,
    sampling: dict[str, Any] | None,
    data: dict[str, Any] | None,
    revision: int | None,
) -> None:
    """Apply the page's edit: a chat preset's prompts and sampling, a template's fields."""
    doc = get_preset(lib, preset_id)
    if doc.kind == LibraryKind.CHAT_COMPLETION_PRESET.value:
        changed = prompt_manager.apply_chat_edit(doc.data, prompts or [], sampling or {})
    else:
        changed = {**doc.data, **(data or {})}
    _save(lib, doc, changed, name=name, revision=revision)


def create_preset(lib: LibraryService, kind: str, name: str) -> Document:
    """A new preset (or template) of a page kind under `name`, holding the product's own
    defaults for that kind; a name already taken by one of the kind is refused."""
    stored_kind = library_kind(kind)
    raw = (files("taverna") / "data" / "presets" / DEFAULT_FILES[kind]).read_bytes()
    return _store_new(lib, stored_kind, name, json.loads(raw))


def copy_preset(lib: LibraryService, preset_id: str, name: str) -> Document:
    """Save a preset (or template) as a new one under `name` ("Save as"); the original is
    left as it is; a name already taken by one of the kind is refused."""
    doc = get_preset(lib, preset_id)
    return _store_new(lib, LibraryKind(doc.kind), name, dict(doc.data))


def _store_new(lib: LibraryService, kind: LibraryKind, name: str, data: dict[str, Any]) -> Document:
    name = name.strip()
    if not name:
        raise TavernaError("a name is needed", field="name", code="name_is_needed")
    if lib.find(kind, name) is not None:
        raise Conflict(
            f"a preset or template named {name!r} exists already",
            field="name",
            code="name_taken",
            params={"name": name},
        )
    if "name" in data:  # templates carry their name inside (SillyTavern's files do)
        data["name"] = name
    item = lib.put(kind, name, prompt_manager.checked(kind, data, name))
    return lib.get(kind, item.id)


def delete_preset(lib: LibraryService, preset_id: str) -> None:
    """Remove a preset or template."""
    doc = chosen_preset(lib, preset_id)
    lib.delete(LibraryKind(doc.kind), doc.id)


def activate(lib: LibraryService, preset_id: str) -> Document:
    """Use this preset (or template) for the next generations; returns it."""
    doc = chosen_preset(lib, preset_id)
    kind = page_kind(doc)
    if kind not in ACTIVE_KEY:
        raise TavernaError(
            "a system prompt preset is not chosen this way",
            field="id",
            code="system_prompt_preset_is_not",
        )
    set_active(lib.store, ACTIVE_KEY[kind], doc.id, lib.owner)
    return doc


def _save(
    lib: LibraryService,
    doc: Document,
    data: Mapping[str, Any],
    *,
    name: str | None = None,
    revision: int | None,
) -> None:
    checked = prompt_manager.checked(LibraryKind(doc.kind), data, doc.name)
    lib.rewrite(doc, checked, name=name, revision=revision)
