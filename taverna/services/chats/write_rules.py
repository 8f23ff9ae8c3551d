"""The rules every write of a chat's tree follows, shared by the parts of `ChatService`.

A write answers with a `WriteResult`; a new or edited message goes through the person's
storage rules (`Rewriter`); a message's event goes out on the bus once it is committed;
a move of the active leaf remembers the choice at every fork above it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol

from taverna.errors import TavernaError
from taverna.model.chat import Chat, Node
from taverna.services.plugins import Event, EventBus, EventName
from taverna.store.repository import UNSET, ChatWriter, Store


@dataclass(frozen=True, slots=True)
class WriteResult:
    """The result of a write: the chat at its new revision and the node concerned."""

    chat: Chat
    node: Node | None = None


@dataclass(frozen=True, slots=True)
class Rewrite:
    """What a message's storage rules make of it: its text, and its reasoning if any."""

    content: str
    reasoning: str | None = None


class Rewriter(Protocol):
    """Storage rules for new and edited messages (None: the message stays as it is).

    `edit`: a person edited the text; `slash`: a script command wrote the message."""

    def __call__(self, chat: Chat, node: Node, *, edit: bool, slash: bool) -> Rewrite | None: ...


class WriteRules:
    """What every part of the chat service (the one writer of the tree) writes by."""

    store: Store
    clock: Callable[[], datetime]
    rewriter: Rewriter | None
    events: EventBus

    def _emit(self, name: EventName, chat_id: str, node: Node | None, *, kind: str = "") -> None:
        self.events.emit(
            Event(name, chat_id, node.id if node else None, node.content if node else "", kind)
        )

    def _rewritten(
        self, result: WriteResult, *, edit: bool = False, slash: bool = False
    ) -> WriteResult:
        """`result` after the storage rules, as a revision of its own when they changed it."""
        node = result.node
        if self.rewriter is None or node is None or node.deleted:
            return result
        rewrite = self.rewriter(result.chat, node, edit=edit, slash=slash)
        if rewrite is None:
            return result
        reasoning = node.generation.extras.get("reasoning") if node.generation else None
        new_reasoning = rewrite.reasoning if isinstance(reasoning, str) else None
        if rewrite.content == node.content and new_reasoning in (None, reasoning):
            return result
        with self.store.write(result.chat.id, revision=result.chat.revision, label="regex") as w:
            if new_reasoning is not None and new_reasoning != reasoning and node.generation:
                extras = {**node.generation.extras, "reasoning": new_reasoning}
                generation = replace(node.generation, extras=extras)
                changed = w.update_node(node.id, content=rewrite.content, generation=generation)
            else:
                changed = w.update_node(node.id, content=rewrite.content)
        return WriteResult(w.chat, changed)

    @staticmethod
    def _require_alive(node: Node) -> None:
        if node.deleted:
            raise TavernaError(
                "that message is deleted; restore it first",
                field="node_id",
                code="that_message_is_deleted_restore",
            )

    @staticmethod
    def _name(name: str) -> str:
        name = name.strip()
        if not name:
            raise TavernaError("a name is required", field="name", code="name_is_required")
        return name

    @staticmethod
    def _activate(w: ChatWriter, leaf_id: str | None, *, branch_id: str | None = UNSET) -> None:
        """Make `leaf_id` the active leaf and remember the choice at every fork above it.

        The choices along the current path are already remembered, so only the part of
        the new path below where it meets the current one is written: moving between
        the last message's swipes costs the same at message 10 and at 100,000.
        """
        if leaf_id is not None:
            current = w.chat.active_leaf_id
            new = w.get_node(leaf_id)
            old = w.get_node(current) if current else None
            while old is None or new.id != old.id:
                if old is None or new.depth >= old.depth:
                    w.set_selection(new.parent_id, new.id)
                    if new.parent_id is None:
                        break
                    new = w.get_node(new.parent_id)
                else:
                    old = w.get_node(old.parent_id) if old.parent_id else None
        w.set_active(leaf_id, branch_id=branch_id)
