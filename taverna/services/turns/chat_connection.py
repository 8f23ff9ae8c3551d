"""The connection and model a chat talks to: chosen per chat, remembered with it.

A chat that chose nothing follows the default connection; a chat that chose one keeps
it (and the model chosen for it) until it chooses again, whatever the default becomes,
so switching the model in one chat leaves every other chat as it was. The choice lives
in the chat's metadata (it travels with an export) and is one undoable revision.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from taverna.errors import NotFound
from taverna.model.chat import Chat
from taverna.services.chats.service import ChatService
from taverna.services.connections.service import Connection, ConnectionService

# The metadata key of the choice (SillyTavern keeps unknown chat_metadata keys as they are).
CHAT_KEY = "taverna_connection"


@dataclass(frozen=True, slots=True)
class ChatChoice:
    """A chat's own connection by name, and the model it asks for ("" the connection's)."""

    name: str
    model: str = ""


def chat_choice(chat: Chat) -> ChatChoice | None:
    """What the chat chose, or None when it follows the default connection."""
    found = chat.metadata.get(CHAT_KEY)
    if not isinstance(found, Mapping):
        return None
    name, model = found.get("name"), found.get("model")
    if not isinstance(name, str) or not name:
        return None
    return ChatChoice(name, model if isinstance(model, str) else "")


def connection_for(
    connections: ConnectionService, chat: Chat, name: str | None = None
) -> Connection:
    """The connection a turn of `chat` goes to: `name` when the caller names one, else the
    chat's own while it exists (a connection deleted since: the default), else the default;
    with the model the chat chose for it."""
    choice = chat_choice(chat)
    if name is None and choice is not None:
        try:
            chosen = connections.get(choice.name)
        except NotFound:
            chosen = connections.get(None)
    else:
        chosen = connections.get(name)
    if choice is not None and choice.model and choice.name == chosen.name:
        return replace(chosen, model=choice.model)
    return chosen


def choose(
    chats: ChatService,
    connections: ConnectionService,
    chat_id: str,
    name: str | None,
    model: str | None,
    *,
    revision: int,
) -> Chat:
    """Have the chat talk to connection `name` (and `model`, None or "": the connection's
    own) from the next turn on; `name` None: follow the default again. A connection that
    does not exist is refused (404) and nothing is written."""
    value: dict[str, str] | None = None
    if name is not None:
        connections.get(name)  # a connection that does not exist: NotFound, nothing written
        value = {"name": name, "model": model or ""}
    return chats.update_metadata(chat_id, {CHAT_KEY: value}, revision=revision).chat
