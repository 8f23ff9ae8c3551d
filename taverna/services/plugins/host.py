"""What a plugin may ask of taverna: each capability behind the grant it needs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from taverna.errors import NotFound, TavernaError
from taverna.model.chat import Node
from taverna.services.plugins.events import PluginAccess
from taverna.services.plugins.grants import Grant

__all__ = ["PluginHost", "PluginServices"]


@dataclass(frozen=True, slots=True)
class PluginServices:
    """The services behind the capabilities, wired by whoever opens the workspace.

    `path(chat_id)`: the chat's active path; `key(connection, chat_id)`: a connection's API
    key (None: the default connection's), of the account that owns chat `chat_id` (None:
    the server's own); `generate(chat_id, prompt, connection)`: a model's answer to
    `prompt` through a connection of the chat's account, nothing stored; `owner(chat_id)`:
    the account a chat belongs to (NotFound for no chat), so a plugin acting for one
    account reaches no other's chats.
    """

    path: Callable[[str], Sequence[Node]] | None = None
    key: Callable[[str | None, str | None], str] | None = None
    generate: Callable[[str, str, str | None], Awaitable[str]] | None = None
    owner: Callable[[str], str] | None = None


class PluginHost:
    """The capabilities one plugin holds; each checks the plugin's grants first.

    A host acts for one account (`account`: the owner of the chat whose event, turn or
    prompt the plugin was handed; "" for an install without accounts): a chat of any
    other account is answered as one that does not exist. A host handed over outside a
    chat (the tools a plugin offers) acts for no account and reads only the chats of an
    install without accounts.
    """

    __slots__ = ("_access", "_account", "_services")

    def __init__(
        self, access: PluginAccess, services: PluginServices, account: str | None = None
    ) -> None:
        self._access = access
        self._services = services
        self._account = account

    @property
    def plugin(self) -> str:
        return self._access.name

    @property
    def grants(self) -> frozenset[Grant]:
        return self._access.grants

    def _own_chat(self, chat_id: str) -> None:
        """NotFound unless `chat_id` is a chat of the account this host acts for."""
        if self._services.owner is None:
            return
        if self._services.owner(chat_id) != (self._account or ""):
            raise NotFound(
                f"no chat {chat_id}",
                field="chat_id",
                code="no_chat",
                params={"chat_id": str(chat_id)},
            )

    def chat_messages(self, chat_id: str) -> list[dict[str, Any]]:
        """The chat's active path: `{id, role, name, text, hidden}` each, oldest first."""
        self._access.require(Grant.READ_CHATS, "read chats")
        if self._services.path is None:
            raise TavernaError("chats cannot be read here", code="chats_cannot_be_read_here")
        self._own_chat(chat_id)
        return [
            {
                "id": n.id,
                "role": n.role.value,
                "name": n.speaker,
                "text": n.content,
                "hidden": n.hidden,
            }
            for n in self._services.path(chat_id)
        ]

    def api_key(self, connection: str | None = None, *, chat_id: str | None = None) -> str:
        """The API key of a connection (None: the default one): one of the account that
        owns chat `chat_id` (a chat of the account this host acts for), or without it one
        of the server's own."""
        self._access.require(Grant.SEE_KEYS, "see API keys")
        if self._services.key is None:
            raise TavernaError("no connections can be read here", code="no_connections_can_be_read")
        if chat_id is not None:
            self._own_chat(chat_id)
        return self._services.key(connection, chat_id)

    async def generate(self, chat_id: str, prompt: str, connection: str | None = None) -> str:
        """A model's answer to `prompt` alone (no chat, no card), nothing stored."""
        self._access.require(Grant.CALL_MODELS, "call models")
        if self._services.generate is None:
            raise TavernaError("no model can be called here", code="no_model_can_be_called")
        self._own_chat(chat_id)
        return await self._services.generate(chat_id, prompt, connection)
