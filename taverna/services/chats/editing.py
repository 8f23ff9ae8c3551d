"""Starting and editing chats as a whole: a new chat with a character, its title, its lorebook.

The page and `taverna chat` both start and change chats through these.
"""

from __future__ import annotations

from datetime import UTC, datetime

from taverna.engine.macros.evaluate import MacroContext, evaluate
from taverna.errors import NotFound
from taverna.model.chat import CharacterRef, Chat
from taverna.model.persona import Persona
from taverna.services.chats.service import ChatService
from taverna.services.library.editing import all_personas
from taverna.services.library.service import LibraryKind, LibraryService
from taverna.store.repository import Store


def default_persona(store: Store, owner: str = "") -> Persona | None:
    """The persona marked default, else the first one, else None."""
    personas = [
        Persona.model_validate(dict(d.data))
        for d in store.find_documents(LibraryKind.PERSONA.value, owner=owner)
    ]
    return next((p for p in personas if p.is_default), personas[0] if personas else None)


def start_chat(chats: ChatService, character_id: str, *, title: str | None, owner: str) -> Chat:
    """A new chat with a character, opened by its greeting (alternate greetings as candidates).

    `{{char}}` and `{{user}}` in the greetings are filled in as the chat starts, as
    SillyTavern does for the first message.
    """
    lib = LibraryService(chats.store, owner=owner)
    character = lib.character(character_id).character
    persona = default_persona(chats.store, owner)
    user = (persona.name if persona else "") or "User"
    names = MacroContext(user=user, char=character.name)
    greetings = [evaluate(text, names).text for text in character.greetings]
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    outcome = chats.create_chat(
        title or f"{character.name} – {stamp}",
        characters=[CharacterRef(character.name, character_id)],
        user_name=user,
        greetings=greetings,
        greeting_speaker=character.name,
        owner=owner,
    )
    return outcome.chat


def rename_chat(chats: ChatService, chat_id: str, title: str, *, revision: int) -> Chat:
    """Give a chat a new title (one revision, undoable); a blank title is refused."""
    return chats.rename_chat(chat_id, title, revision=revision).chat


def set_chat_persona(
    chats: ChatService, lib: LibraryService, chat_id: str, persona_id: str, *, revision: int
) -> Chat:
    """Have the chat's user speak as the persona `persona_id` from the next turn on
    (one revision, undoable)."""
    persona = dict(all_personas(lib)).get(persona_id)
    if persona is None:
        raise NotFound(
            f"no persona {persona_id!r}",
            field="persona_id",
            code="no_persona",
            params={"persona_id": str(persona_id)},
        )
    return chats.set_user_name(chat_id, persona.name, revision=revision).chat


def set_chat_lorebook(
    chats: ChatService, chat_id: str, lorebook_id: str | None, *, owner: str, revision: int
) -> Chat:
    """Bind a library lorebook to a chat as its own (by name, as SillyTavern's header has
    it), or unbind it with None."""
    name = ""
    if lorebook_id:
        name = LibraryService(chats.store, owner=owner).get(LibraryKind.LOREBOOK, lorebook_id).name
    return chats.set_lorebook(chat_id, name, revision=revision).chat


def delete_chat(chats: ChatService, chat_id: str, *, revision: int) -> None:
    """Delete a chat with its whole tree, if it is still at `revision` (its backups stay)."""
    chats.delete_chat(chat_id, revision=revision)
