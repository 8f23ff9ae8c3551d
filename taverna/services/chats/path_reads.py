"""Reading a chat's path as a turn and a page need it: the active path, a window of it,
where two paths meet. Reads only: a part of `ChatService`, which answers every write with
what these read.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from taverna.model.chat import ActivePath, Chat, PathWindow
from taverna.store.repository import Store


class PathReads:
    """The chat service's reads of the active path (a part of `ChatService`)."""

    store: Store

    def reading(self) -> AbstractContextManager[None]:
        """A span of reads only (a view of a chat, a turn's prompt): they share one
        connection to the database (`Store.reading`)."""
        return self.store.reading()

    def get_chat(self, chat_id: str) -> Chat:
        return self.store.get_chat(chat_id)

    def active_path(
        self, chat_id: str, *, include_deleted: bool = False, tail: int | None = None
    ) -> ActivePath:
        """The chat as read: each message with its hidden flag and its `‹k/n›` place.

        `tail` reads only the last messages (cheap at any chat length).
        """
        return self.store.active_path(chat_id, include_deleted=include_deleted, tail=tail)

    def window(
        self,
        chat_id: str,
        *,
        limit: int,
        before: str | None = None,
        after: str | None = None,
        at: int | None = None,
    ) -> PathWindow:
        """A page of the active path: its last `limit` messages, those just older than
        `before` or just newer than `after`, or those from position `at` on. Costs the page
        at any chat length (`at`: and a climb over ids)."""
        if at is not None:
            return self.store.path_at(chat_id, at, limit=limit)
        if after is not None:
            return self.store.path_after(chat_id, after, limit=limit)
        return self.store.path_before(chat_id, before, limit=limit)

    def window_from(
        self, chat_id: str, parent_id: str | None, *, limit: int
    ) -> tuple[PathWindow, bool]:
        """The active path below `parent_id` (None: from its start) to its end, when at
        most `limit` messages follow; else its last `limit` messages. True with the
        first: the window reaches back to `parent_id`.

        What a write answers with: everything it may have changed, and what follows.
        """
        below = self.store.path_after(chat_id, parent_id, limit=limit)
        if below.has_newer:
            return self.store.path_before(chat_id, None, limit=limit), False
        return below, True

    def meeting_point(
        self, chat_id: str, first: str | None, second: str | None, *, within: int
    ) -> str | None:
        """The deepest message two paths share, looked for only `within` messages above
        their ends (None: not that close, or no shared message).

        After a move of the active leaf, the path changed only below it.
        """
        if first is None or second is None:
            return None
        if first == second:
            return first
        above = {first} | {
            e.node.id for e in self.store.path_before(chat_id, first, limit=within).entries
        }
        climb = self.store.path_before(chat_id, second, limit=within).entries
        for node_id in [second, *reversed([e.node.id for e in climb])]:
            if node_id in above:
                return node_id
        return None
