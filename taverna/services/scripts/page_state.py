"""What a script's page commands change outside its chat: instruct mode and the system
prompt switched on or off (`/instruct-state`, `/sysprompt-state`), the lorebooks every chat
uses (`/world`) and characters' tags (`/tag-*`), in the person's library and settings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from taverna.engine.tokens import get_tokenizer
from taverna.formats.card_json import card_to_json
from taverna.model.character import Character
from taverna.model.chat import Chat
from taverna.services.library.active_settings import (
    ACTIVE,
    SETTINGS_KIND,
    SYSPROMPT_ENABLED,
    active_choices,
    set_active,
)
from taverna.services.library.service import LibraryKind, LibraryService

INSTRUCT = "instruct_template"
# Where the instruct template turned off is remembered, so turning it on takes it again.
INSTRUCT_OFF = "instruct_template_off"
WORLD_INFO_SETTINGS = "world_info_settings"


def _active_data(lib: LibraryService) -> Mapping[str, Any]:
    docs = lib.store.find_documents(SETTINGS_KIND, name=ACTIVE, owner=lib.owner)
    return docs[-1].data if docs else {}


def instruct_on(lib: LibraryService, state: bool | None) -> bool:
    """Instruct mode: on while an instruct template is chosen (SillyTavern's checkbox)."""
    chosen = active_choices(lib.store, lib.owner).get(INSTRUCT)
    if state is None or state == (chosen is not None):
        return chosen is not None
    if not state:
        set_active(lib.store, INSTRUCT_OFF, chosen, lib.owner)
        set_active(lib.store, INSTRUCT, None, lib.owner)
        return False
    remembered = _active_data(lib).get(INSTRUCT_OFF)
    templates = lib.documents(LibraryKind.INSTRUCT_TEMPLATE)
    pick = next((d.id for d in templates if d.id == remembered), None)
    if pick is None and templates:
        pick = templates[0].id
    if pick is None:
        return False  # no instruct template in the library to turn on
    set_active(lib.store, INSTRUCT, pick, lib.owner)
    return True


def sysprompt_on(lib: LibraryService, state: bool | None) -> bool:
    """Whether the system prompt is used (SillyTavern's `power_user.sysprompt.enabled`)."""
    current = _active_data(lib).get(SYSPROMPT_ENABLED, True) is not False
    if state is None or state == current:
        return current
    set_active(lib.store, SYSPROMPT_ENABLED, state, lib.owner)
    return state


def select_books(lib: LibraryService, names: Sequence[str], state: str) -> list[str]:
    """`/world`: the global selection after turning the books named (any case) on, off or
    toggling them; no names: none selected. Names of no lorebook are passed over."""
    world = dict(_active_data(lib).get(WORLD_INFO_SETTINGS) or {})
    inner = dict(world.get("world_info") or {})
    selected = [s for s in inner.get("globalSelect") or [] if isinstance(s, str)]
    if not names:
        selected = []
    books = {d.name.lower(): d.name for d in lib.documents(LibraryKind.LOREBOOK)}
    for wanted in names:
        name = books.get(wanted.lower())
        if name is None:
            continue
        if state == "off" or (state == "toggle" and name in selected):
            selected = [s for s in selected if s != name]
        elif name not in selected:
            selected.append(name)
    inner["globalSelect"] = selected
    world["world_info"] = inner
    set_active(lib.store, WORLD_INFO_SETTINGS, world, lib.owner)
    return selected


def _character_doc(lib: LibraryService, name: str) -> Any:
    """The character called `name` (any case), or None."""
    found = lib.find(LibraryKind.CHARACTER, name)
    if found is not None:
        return found
    wanted = name.lower()
    return next((d for d in lib.documents(LibraryKind.CHARACTER) if d.name.lower() == wanted), None)


def character_tags(lib: LibraryService, name: str) -> list[str] | None:
    """A character's tags (its card's), None when there is no character of that name."""
    doc = _character_doc(lib, name)
    return None if doc is None else list(lib.character(doc.id).character.tags)


def change_tag(lib: LibraryService, name: str, tag: str, *, add: bool) -> bool:
    """Add or remove a tag on a character's card; whether its tags changed."""
    doc = _character_doc(lib, name)
    if doc is None:
        return False
    character: Character = lib.character(doc.id).character
    tags = list(character.tags)
    has = any(t.lower() == tag.lower() for t in tags)
    if has == add:
        return False
    tags = [*tags, tag] if add else [t for t in tags if t.lower() != tag.lower()]
    changed = Character.model_validate({**character.to_json(), "tags": tags})
    lib.store.put_document(
        doc.kind, doc.name, card_to_json(changed), id=doc.id, revision=doc.revision, owner=doc.owner
    )
    return True


class PageCommands:
    """The page commands of a script's host, over the person's library and settings; a host
    class takes them by inheriting this (it has `library`, and `chat` where it runs in one).
    `tokenizer` is the one the chat's prompt is counted with."""

    library: LibraryService
    tokenizer: str

    def _chat_character(self) -> str | None:
        """`{{char}}` of the chat the script runs in (its first character), if any."""
        chat: Chat | None = getattr(self, "chat", None)
        return chat.characters[0].name if chat is not None and chat.characters else None

    def count_tokens(self, text: str) -> int:
        return get_tokenizer(self.tokenizer).count(text)

    def switch(self, name: str, state: bool | None) -> bool:
        if name == "instruct":
            return instruct_on(self.library, state)
        return sysprompt_on(self.library, state)

    def select_books(self, names: Sequence[str], state: str) -> None:
        select_books(self.library, names, state)

    def character_tags(self, name: str | None) -> Sequence[str] | None:
        wanted = name or self._chat_character()
        return None if wanted is None else character_tags(self.library, wanted)

    def change_tag(self, name: str | None, tag: str, *, add: bool) -> bool:
        wanted = name or self._chat_character()
        return False if wanted is None else change_tag(self.library, wanted, tag, add=add)
