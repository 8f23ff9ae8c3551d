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


def require_document(store: Store, owner: str, document_id: str, field: str) -> None:
    """NotFound if `document_id` is a document of another account. An id that names no
    document passes: the route looks it up (by name, in the account's own library) and
    answers itself. A draft belongs to whoever owns its chat."""
    try:
        doc = store.get_document(document_id)
    except NotFound:
        return
    if doc.kind == "draft":
        chat_id = str(doc.data.get("chat_id", ""))
        try:
            require_chat(store, owner, chat_id)
        except NotFound:
            raise NotFound(
                f"no draft {document_id}",
                field=field,
                code="no_draft",
                params={"document_id": str(document_id)},
            ) from None
        return
    if doc.owner != owner:
        raise NotFound(
            f"no such item {document_id}",
            field=field,
            code="no_such_item",
            params={"document_id": str(document_id)},
        )
