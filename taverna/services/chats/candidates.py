"""Candidates: the messages at one place of a chat (a message and its siblings), the
person's swipes among them and the `‹ ›` arrows.

A part of `ChatService`, the one writer of the tree; a generated candidate lands by the
rules in `generated.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taverna.errors import NotFound
from taverna.model.chat import ChatState, GenerationInfo, Node
from taverna.services.chats.write_rules import WriteResult, WriteRules
from taverna.services.plugins import EventName


class Candidates(WriteRules):
    """The chat service's candidates (a part of `ChatService`)."""

    def candidates(self, chat_id: str, node_id: str) -> list[Node]:
        """The candidates at a node's place (itself and its siblings), in creation order."""
        node = self.store.get_node(chat_id, node_id)
        return self.store.children(chat_id, node.parent_id)

    def swipe(
        self,
        chat_id: str,
        node_id: str,
        content: str,
        *,
        revision: int,
        speaker: str | None = None,
        extras: Mapping[str, Any] | None = None,
        generation: GenerationInfo | None = None,
        state: ChatState | None = None,
        select: bool = True,
    ) -> WriteResult:
        """Add a candidate at `node_id`'s place (a sibling); select it unless told not to."""
        with self.store.write(chat_id, revision=revision, label="swipe") as w:
            beside = w.get_node(node_id)
            self._require_alive(beside)
            node = w.insert_node(
                beside.parent_id,
                beside.role,
                content,
                speaker=beside.speaker if speaker is None else speaker,
                extras=extras,
                generation=generation,
                state=state,
                created=self.clock(),
            )
            if select:
                self._activate(w, node.id)
        return WriteResult(w.chat, node)

    def select_candidate(self, chat_id: str, node_id: str, *, revision: int) -> WriteResult:
        """Choose `node_id` at its place; the path continues where it last went below it."""
        with self.store.write(chat_id, revision=revision, label="select") as w:
            node = w.get_node(node_id)
            self._require_alive(node)
            self._activate(w, w.descend(node.id))
        chosen = self.store.get_node(chat_id, node_id)
        self._emit(EventName.MESSAGE_SWIPED, chat_id, chosen)
        return WriteResult(w.chat, chosen)

    def step_candidate(
        self, chat_id: str, node_id: str, step: int, *, revision: int
    ) -> WriteResult:
        """Move `step` candidates from `node_id` (the `‹` and `›` arrows), wrapping around."""
        node = self.store.get_node(chat_id, node_id)
        siblings = self.store.children(chat_id, node.parent_id)
        ids = [s.id for s in siblings]
        if node.id not in ids:
            raise NotFound(
                "that message is deleted", field="node_id", code="that_message_is_deleted"
            )
        target = ids[(ids.index(node.id) + step) % len(ids)]
        return self.select_candidate(chat_id, target, revision=revision)
