"""Checkpoints: named pointers to a message, to come back to.

A part of `ChatService`, the one writer of the tree.
"""

from __future__ import annotations

from taverna.errors import NotFound, TavernaError
from taverna.model.chat import Checkpoint, new_id
from taverna.services.chats.write_rules import WriteResult, WriteRules
from taverna.services.plugins import EventName


class Checkpoints(WriteRules):
    """The chat service's checkpoints (a part of `ChatService`)."""

    def list_checkpoints(self, chat_id: str) -> list[Checkpoint]:
        return self.store.checkpoints(chat_id)

    def create_checkpoint(
        self, chat_id: str, node_id: str, name: str, *, revision: int
    ) -> tuple[WriteResult, Checkpoint]:
        """A named pointer to a message, to come back to (branch from it to continue there)."""
        name = self._name(name)
        with self.store.write(chat_id, revision=revision, label="checkpoint") as w:
            node = w.get_node(node_id)
            self._require_alive(node)
            if any(c.name == name for c in w.checkpoints()):
                raise TavernaError(
                    f"a checkpoint named {name!r} exists",
                    field="name",
                    code="checkpoint_named_exists",
                    params={"name": str(name)},
                )
            checkpoint = Checkpoint(new_id(), chat_id, name, node_id, self.clock())
            w.put_checkpoint(checkpoint)
        return WriteResult(w.chat, node), checkpoint

    def open_checkpoint(self, chat_id: str, checkpoint_id: str, *, revision: int) -> WriteResult:
        """Go back to a checkpoint: the active path ends at its message.

        No branch is active then, so every branch keeps its head where it was (opening a
        checkpoint must not cut a branch short); what is written from here on belongs to no
        branch until the person switches to one or branches off.
        """
        with self.store.write(chat_id, revision=revision, label="open checkpoint") as w:
            found = next((c for c in w.checkpoints() if c.id == checkpoint_id), None)
            if found is None:
                raise NotFound(
                    "no such checkpoint", field="checkpoint_id", code="no_such_checkpoint"
                )
            node = w.get_node(found.node_id)
            self._require_alive(node)
            self._activate(w, node.id, branch_id=None)
        self._emit(EventName.CHAT_CHANGED, chat_id, node, kind="open checkpoint")
        return WriteResult(w.chat, node)

    def delete_checkpoint(self, chat_id: str, checkpoint_id: str, *, revision: int) -> WriteResult:
        with self.store.write(chat_id, revision=revision, label="delete checkpoint") as w:
            if not any(c.id == checkpoint_id for c in w.checkpoints()):
                raise NotFound(
                    "no such checkpoint", field="checkpoint_id", code="no_such_checkpoint"
                )
            w.remove_checkpoint(checkpoint_id)
        return WriteResult(w.chat)
