"""Finding chats and reading them whole: the list of chats (all, or a character's), one
chat's line in it, a chat by a prefix of its id, where a message sits, the whole tree.

The page and the command line both find chats through these; the chat service keeps
the reads a turn needs and every write.
"""

from __future__ import annotations

from datetime import UTC, datetime

from taverna.errors import NotFound
from taverna.model.chat import ChatListing, ChatTree
from taverna.services.chats.service import ChatService


def listings(
    chats: ChatService, *, owner: str = "", character: str | None = None
) -> list[ChatListing]:
    """The account's chats, newest first; with `character` (a name or a library id) only
    the chats with that character."""
    return chats.store.list_chats(owner=owner, character=character)


def listing(chats: ChatService, chat_id: str, *, owner: str = "") -> ChatListing:
    """One chat's line in the list of chats (NotFound for another account's chat)."""
    for found in listings(chats, owner=owner):
        if found.chat.id == chat_id:
            return found
    raise NotFound("no such chat", field="chat_id", code="no_such_chat")


def newest_with(chats: ChatService, character: str, *, owner: str = "") -> ChatListing | None:
    """The most recently changed chat with a character (a name or a library id), if any."""
    found = listings(chats, owner=owner, character=character)
    oldest = datetime.min.replace(tzinfo=UTC)
    return max(
        found, key=lambda item: item.chat.updated or item.chat.created or oldest, default=None
    )


def chat_id(chats: ChatService, given: str, *, owner: str = "") -> str:
    """A chat id from a full id or a unique prefix of one."""
    try:
        return chats.get_chat(given).id
    except NotFound:
        pass
    matches = [c.chat.id for c in listings(chats, owner=owner) if c.chat.id.startswith(given)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise NotFound(
            f"no chat with id {given!r} (see `taverna chats list`)",
            field="id",
            code="no_chat_with_id_see",
            params={"given": str(given)},
        )
    raise NotFound(
        f"{len(matches)} chats start with {given!r}; give more of the id",
        field="id",
        code="chats_start_with_give_more",
        params={"n": str(len(matches)), "given": str(given)},
    )


def parent_of(chats: ChatService, chat_id: str, node_id: str) -> str | None:
    """The message above `node_id` (None: it is a first message); NotFound unless
    `node_id` is a message of this chat."""
    node = chats.store.get_node(chat_id, node_id)
    if node.chat_id != chat_id:
        raise NotFound(
            "no such message in this chat", field="node_id", code="no_such_message_in_this"
        )
    return node.parent_id


def tree(chats: ChatService, chat_id: str) -> ChatTree:
    """The chat's whole tree, deleted messages included, parents before children."""
    return chats.store.tree(chat_id)
