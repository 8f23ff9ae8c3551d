"""Putting a message at a place in the middle of a chat, as STscript's `at=` does.

The tree has no way to move a message to a new parent, so an insertion starts a branch under
the message before the place and the later messages continue it as copies; the path as it
was stays in the tree as the other candidate at that place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taverna.model.chat import NodeRole
from taverna.services.chats.write_rules import WriteResult, WriteRules


class Insertion(WriteRules):
    """The chat service's insertion at a place (a part of `ChatService`, the one writer)."""

    def append(
        self,
        chat_id: str,
        role: NodeRole,
        content: str,
        *,
        revision: int,
        speaker: str = "",
        hidden: bool = False,
        extras: Mapping[str, Any] | None = None,
        slash: bool = False,
    ) -> WriteResult:
        raise NotImplementedError  # the chat service's own

    def insert_at(
        self,
        chat_id: str,
        index: int,
        role: NodeRole,
        content: str,
        *,
        revision: int,
        speaker: str = "",
        hidden: bool = False,
        extras: Mapping[str, Any] | None = None,
        slash: bool = False,
    ) -> WriteResult:
        """Put a message at place `index` of the chat as read (0: before the first); the
        messages from there on follow it (a place outside the chat: the same as `append`).

        Nothing is lost: the new message starts a branch under the message before it and
        the later messages continue that branch as copies; the path as it was stays in the
        tree as the other candidate at that place."""
        if not 0 <= index < len(self.store.active_path(chat_id).nodes):
            return self.append(
                chat_id,
                role,
                content,
                revision=revision,
                speaker=speaker,
                hidden=hidden,
                extras=extras,
                slash=slash,
            )
        with self.store.write(chat_id, revision=revision, label=f"insert {role.value}") as w:
            path = w.active_nodes()
            visible = [n for n in path if not n.deleted]
            parent = visible[index - 1].id if index else None
            after = path[path.index(visible[index]) :]
            node = w.insert_node(
                parent,
                role,
                content,
                speaker=speaker,
                hidden=hidden,
                extras=extras,
                created=self.clock(),
            )
            w.set_selection(parent, node.id)
            leaf = node.id
            for old in after:
                if old.deleted:
                    continue  # a tombstone stays on the path as it was
                copy = w.insert_node(
                    leaf,
                    old.role,
                    old.content,
                    speaker=old.speaker,
                    hidden=old.hidden,
                    extras=old.extras,
                    generation=old.generation,
                    state=old.state,
                    created=old.created,
                )
                w.set_selection(leaf, copy.id)
                leaf = copy.id
            w.set_active(leaf)
        inserted = self.store.get_node(chat_id, node.id)
        return self._rewritten(WriteResult(w.chat, inserted), slash=slash)
