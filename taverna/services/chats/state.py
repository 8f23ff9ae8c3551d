"""The chat's state along the path: variables, timers and summaries recorded on the
message they change from (copy on write), read at any message.

A part of `ChatService`, the one writer of the tree.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from taverna.model.chat import ChatState, Node
from taverna.services.chats.write_rules import WriteResult, WriteRules
from taverna.store.repository import ChatWriter


class PathState(WriteRules):
    """The chat service's state writes and reads (a part of `ChatService`)."""

    def state_at(self, chat_id: str, node_id: str | None = None) -> ChatState:
        """The state in force at a node; without one, at the end of the active path."""
        if node_id is None:
            chat = self.store.get_chat(chat_id)
            return self.store.state_at(chat_id, chat.active_leaf_id)
        return self.store.state_at(chat_id, node_id)

    def write_state(
        self, chat_id: str, node_id: str | None, state: ChatState, *, revision: int
    ) -> WriteResult:
        """Record the state in force from `node_id` on (None: the chat's base state)."""
        with self.store.write(chat_id, revision=revision, label="state") as w:
            if node_id is None:
                w.update_chat(base_state=state)
                node = None
            else:
                node = w.update_node(node_id, state=state)
        return WriteResult(w.chat, node)

    def update_state(
        self, chat_id: str, *, revision: int, node_id: str | None = None, **changes: Any
    ) -> WriteResult:
        """Change some state fields at a node (default: the active leaf), keeping the rest."""
        chat = self.store.get_chat(chat_id)
        target = node_id if node_id is not None else chat.active_leaf_id
        current = self.store.state_at(chat_id, target)
        return self.write_state(chat_id, target, replace(current, **changes), revision=revision)

    def write_summary(
        self, chat_id: str, node_id: str, text: str | None, *, revision: int
    ) -> WriteResult:
        """Record a summary made at `node_id` (the newest message it covers), or with
        `text` None remove the one made there (the one before it is in force again).

        States recorded below it on the active path copied the summary in force when
        they were recorded: those that copied the one replaced copy the new one.
        """
        with self.store.write(chat_id, revision=revision, label="summary") as w:
            node = w.get_node(node_id)
            self._require_alive(node)
            node = self._set_summary(w, node, text)
        return WriteResult(w.chat, node)

    @staticmethod
    def _set_summary(w: ChatWriter, node: Node, text: str | None) -> Node:
        state = w.state_at(node.id)
        old_at = state.summary_at
        if text is None:
            before = w.state_at(node.parent_id) if node.parent_id else w.chat.base_state
            new_text, new_at = before.summary, before.summary_at
        else:
            new_text, new_at = text, node.id
        node = w.update_node(node.id, state=replace(state, summary=new_text, summary_at=new_at))
        leaf = w.chat.active_leaf_id
        if leaf is not None and leaf != node.id:
            path = w.path_to(leaf)
            ids = [n.id for n in path]
            below = path[ids.index(node.id) + 1 :] if node.id in ids else []
            for later in below:
                if later.state is not None and later.state.summary_at == old_at:
                    changed = replace(later.state, summary=new_text, summary_at=new_at)
                    w.update_node(later.id, state=changed)
        return node
