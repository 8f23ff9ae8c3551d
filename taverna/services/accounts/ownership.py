"""Whose is this? The checks that keep one account's chats and library from another's.

With accounts, every request acts for one account (its id is the `owner` of its rows). A
chat, a document, a running generation or an import named by id is checked here before
anything reads or changes it: another account's is answered exactly as one that does not
exist (NotFound), so ids cannot even be probed.
"""

from __future__ import annotations

from taverna.errors import NotFound
from taverna.store.repository import Store

# Path parameters naming a library document (character, lorebook, persona, preset,
# group, quick-reply set, draft) by id.
DOCUMENT_PARAMS = frozenset(
    {"character_id", "lorebook_id", "persona_id", "preset_id", "group_id", "set_id", "draft_id"}
)


class Ownership:
    """The checks for one account (`owner`), over the store."""

    def __init__(self, store: Store, owner: str) -> None:
        self.store = store
        self.owner = owner

    def chat(self, chat_id: str) -> None:
        require_chat(self.store, self.owner, chat_id)

    def document(self, document_id: str, field: str) -> None:
        require_document(self.store, self.owner, document_id, field)


def require_chat(store: Store, owner: str, chat_id: str) -> None:
    """NotFound unless chat `chat_id` is `owner`'s."""
    if store.get_chat(chat_id).owner != owner:
        raise NotFound(
            f"no chat {chat_id}", field="chat_id", code="no_chat", params={"chat_id": str(chat_id)}
        )


def no_item(document_id: str, field: str) -> NotFound:
    """The one answer for a library id that is not the account's: there is no such
    document, it is another account's, or it is a draft of another account's chat."""
    return NotFound(
        f"no such item {document_id}",
        field=field,
        code="no_such_item",
        params={"document_id": str(document_id)},
    )


def require_document(store: Store, owner: str, document_id: str, field: str) -> None:
    """NotFound (`no_item`) unless `document_id` is a document of `owner`'s; a draft
    belongs to whoever owns its chat. An id that names no document is answered the same,
    so another account's ids cannot be told from ids that do not exist."""
    try:
        doc = store.get_document(document_id)
    except NotFound:
        raise no_item(document_id, field) from None
    if doc.kind == "draft":
        chat_id = str(doc.data.get("chat_id", ""))
        try:
            require_chat(store, owner, chat_id)
        except NotFound:
            raise no_item(document_id, field) from None
        return
    if doc.owner != owner:
        raise no_item(document_id, field)
