"""A chat's revisions: every write is one, a message's texts are kept, and the newest
operation can be undone and redone (each itself a new revision).

A part of `ChatService`, the one writer of the tree.
"""

from __future__ import annotations

from taverna.model.chat import ContentVersion, Revision
from taverna.services.chats.write_rules import WriteResult, WriteRules


class Revisions(WriteRules):
    """The chat service's history, undo and redo (a part of `ChatService`)."""

    def history(self, chat_id: str, node_id: str) -> list[ContentVersion]:
        """Every text a message has had, oldest first."""
        return self.store.content_history(chat_id, node_id)

    def revisions(self, chat_id: str, *, limit: int = 100) -> list[Revision]:
        return self.store.revisions(chat_id, limit=limit)

    def undo(self, chat_id: str, *, revision: int) -> WriteResult:
        """Revert the newest operation not yet undone (itself a new revision)."""
        with self.store.write(chat_id, revision=revision, label="undo") as w:
            w.undo()
        return WriteResult(w.chat)

    def redo(self, chat_id: str, *, revision: int) -> WriteResult:
        """Re-apply the operation undone last; a new operation since then forbids it."""
        with self.store.write(chat_id, revision=revision, label="redo") as w:
            w.redo()
        return WriteResult(w.chat)
