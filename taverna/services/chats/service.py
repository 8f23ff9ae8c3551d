"""Chat operations on the conversation tree: each one transaction and one new revision.

`ChatService` is the one writer of a chat's tree: the person's edits and a
generation's results (replies, candidates, continues, tool steps, kept drafts) are
stored here by one set of rules, so a swipe is a swipe whoever made it
(tests/services/test_one_writer.py holds every other module to that).

Every write names the chat revision the caller read (`revision=`); a stale one
raises `StaleRevision` (a `Conflict`) carrying the current revision. Every write
returns a `WriteResult`: the chat at its new revision and the node the operation
created or changed, if any. Every write can be undone and redone.

A new or edited message then goes through the person's storage rules (`Rewriter`:
regex scripts that rewrite the stored text, as SillyTavern applies them when a message
is saved); a rewrite is a revision of its own, so undo brings back the text as written.

Once a message write is committed, its event goes out on the bus (`message_sent`,
`message_received`, `message_edited`, `message_deleted`, `message_swiped`, and
`chat_id_changed` for a new chat, a branch switched or a checkpoint opened), whoever
made it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from taverna.errors import TavernaError
from taverna.model.chat import CharacterRef, ChatState, GenerationInfo, Node, NodeRole
from taverna.services.chats.branches import Branches, kept_branch_lists
from taverna.services.chats.candidates import Candidates
from taverna.services.chats.checkpoints import Checkpoints
from taverna.services.chats.generated import GeneratedMessages
from taverna.services.chats.images import ImageLibrary, with_image
from taverna.services.chats.insertion import Insertion
from taverna.services.chats.path_reads import PathReads
from taverna.services.chats.revisions import Revisions
from taverna.services.chats.state import PathState
from taverna.services.chats.write_rules import Rewriter
from taverna.services.chats.write_rules import WriteResult as WriteResult
from taverna.services.plugins import EventBus, EventName
from taverna.store.repository import ChatWriter, NewChat, Store


def _utcnow() -> datetime:
    return datetime.now(UTC)


class ChatService(
    PathReads,
    Candidates,
    GeneratedMessages,
    Branches,
    Checkpoints,
    PathState,
    Revisions,
    Insertion,
):
    """The use cases of a conversation tree, shared by the CLI, the server and generation.

    Its parts live beside it, one concept each (reads of the path, candidates, generated
    messages, branches, checkpoints, state, revisions, insertion at a place); this class
    holds what makes and edits messages, and is the one writer they all belong to.
    """

    def __init__(
        self,
        store: Store,
        *,
        clock: Callable[[], datetime] = _utcnow,
        rewriter: Rewriter | None = None,
        events: EventBus | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.rewriter = rewriter
        self.events = events if events is not None else EventBus()
        self._branches = kept_branch_lists()  # the branch lists kept (see `Branches`)
        self._branches_lock = threading.Lock()

    # ---------------------------------------------------------------- creating

    def create_chat(
        self,
        title: str,
        *,
        characters: Sequence[CharacterRef] = (),
        group_id: str | None = None,
        user_name: str = "",
        greetings: Sequence[str] = (),
        greeting_speaker: str = "",
        base_state: ChatState | None = None,
        metadata: Mapping[str, Any] | None = None,
        owner: str = "",
    ) -> WriteResult:
        """A new chat; `greetings[0]` opens it, the others are its alternate greetings.

        Alternate greetings are candidates of the first message (formats-chat.md §4.3),
        so `‹ › ` on the greeting moves between them.
        """
        chat = self.store.create_chat(
            NewChat(
                title=title,
                characters=tuple(characters),
                group_id=group_id,
                user_name=user_name,
                base_state=base_state or ChatState(),
                metadata=dict(metadata or {}),
                owner=owner,
                created=self.clock(),
            )
        )
        if not greetings:
            self._emit(EventName.CHAT_CHANGED, chat.id, None, kind="new chat")
            return WriteResult(chat)
        with self.store.write(chat.id, revision=chat.revision, label="greetings") as w:
            nodes = [
                w.insert_node(
                    None, NodeRole.ASSISTANT, text, speaker=greeting_speaker, created=self.clock()
                )
                for text in greetings
            ]
            first = nodes[0]
            w.set_selection(None, first.id)
            w.set_active(first.id)
        result = WriteResult(w.chat, first)
        # Each greeting through the storage rules (SillyTavern regexes them as the chat starts).
        for node in nodes[1:]:
            result = WriteResult(self._rewritten(WriteResult(result.chat, node)).chat, first)
        result = self._rewritten(result)
        self._emit(EventName.CHAT_CHANGED, chat.id, result.node, kind="new chat")
        return result

    def delete_chat(self, chat_id: str, *, revision: int) -> None:
        """Delete a chat with its whole tree, if it is still at `revision` (its backups stay)."""
        self.store.delete_chat(chat_id, revision=revision)

    def rename_chat(self, chat_id: str, title: str, *, revision: int) -> WriteResult:
        """Give a chat a new title; nothing links by title, so nothing breaks."""
        title = self._name(title)
        with self.store.write(chat_id, revision=revision, label="rename") as w:
            w.update_chat(title=title)
        return WriteResult(w.chat)

    def set_user_name(self, chat_id: str, name: str, *, revision: int) -> WriteResult:
        """Speak as another persona from the next turn on (the persona of that name);
        messages already written keep the name they were written under."""
        name = self._name(name)
        with self.store.write(chat_id, revision=revision, label="persona") as w:
            w.update_chat(user_name=name)
        return WriteResult(w.chat)

    def set_lorebook(self, chat_id: str, name: str | None, *, revision: int) -> WriteResult:
        """Bind the chat's own lorebook by name (None or "": unbind it).

        Stored as `world_info` in the metadata, where SillyTavern's chat header has it,
        so an exported chat keeps its binding.
        """
        with self.store.write(chat_id, revision=revision, label="chat lorebook") as w:
            metadata = dict(w.chat.metadata)
            if name:
                metadata["world_info"] = name
            else:
                metadata.pop("world_info", None)
            w.update_chat(metadata=metadata)
        return WriteResult(w.chat)

    def update_metadata(
        self, chat_id: str, changes: Mapping[str, Any], *, revision: int
    ) -> WriteResult:
        """Set chat metadata keys (a value of None removes the key), keeping the others."""
        with self.store.write(chat_id, revision=revision, label="metadata") as w:
            merged = dict(w.chat.metadata)
            for key, value in changes.items():
                if value is None:
                    merged.pop(key, None)
                else:
                    merged[key] = value
            w.update_chat(metadata=merged)
        return WriteResult(w.chat)

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
        generation: GenerationInfo | None = None,
        state: ChatState | None = None,
        node_id: str | None = None,
        created: datetime | None = None,
        slash: bool = False,
    ) -> WriteResult:
        """Add a message after the active leaf; the active branch moves along.

        `node_id` and `created`: chosen beforehand (a generation builds its prompt with the
        message while it is being written). `slash`: a script command wrote it."""
        with self.store.write(chat_id, revision=revision, label=f"append {role.value}") as w:
            parent = w.chat.active_leaf_id
            node = w.insert_node(
                parent,
                role,
                content,
                speaker=speaker,
                hidden=hidden,
                extras=extras,
                generation=generation,
                state=state,
                created=created or self.clock(),
                node_id=node_id,
            )
            w.set_selection(parent, node.id)
            w.set_active(node.id)
        result = self._rewritten(WriteResult(w.chat, node), slash=slash)
        if role is NodeRole.USER:
            self._emit(EventName.MESSAGE_SENT, chat_id, result.node)
        elif role is NodeRole.ASSISTANT:
            self._emit(EventName.MESSAGE_RECEIVED, chat_id, result.node)
        return result

    # ----------------------------------------------------------------- editing

    def edit(self, chat_id: str, node_id: str, content: str, *, revision: int) -> WriteResult:
        """Replace a message's text in place; the old text stays in its history.

        A summary made at this message described the old text: it goes (the one before it
        is in force again), as SillyTavern drops an edited message's `extra.memory`.
        """
        with self.store.write(chat_id, revision=revision, label="edit") as w:
            old = w.get_node(node_id)
            if old.content != content and old.state is not None and old.state.summary_at == old.id:
                self._set_summary(w, old, None)
            node = w.update_node(node_id, content=content)
        result = self._rewritten(WriteResult(w.chat, node), edit=True)
        self._emit(EventName.MESSAGE_EDITED, chat_id, result.node)
        return result

    def edit_and_resend(
        self, chat_id: str, node_id: str, content: str, *, revision: int
    ) -> WriteResult:
        """A new sibling of a user message with new text; the old turn stays as a branch."""
        with self.store.write(chat_id, revision=revision, label="edit and resend") as w:
            old = w.get_node(node_id)
            self._require_alive(old)
            if old.role is not NodeRole.USER:
                raise TavernaError(
                    "only a user message can be edited and resent",
                    field="node_id",
                    code="resend_needs_user_message",
                )
            node = w.insert_node(
                old.parent_id,
                old.role,
                content,
                speaker=old.speaker,
                extras=old.extras,
                created=self.clock(),
            )
            self._activate(w, node.id)
        return self._rewritten(WriteResult(w.chat, node), edit=True)

    def set_image(
        self, chat_id: str, node_id: str, image: str | None, *, revision: int
    ) -> WriteResult:
        """Attach a stored picture to a message (None: take it off); undo brings back the old."""
        if image is not None:
            ImageLibrary(self.store, owner=self.store.get_chat(chat_id).owner).require(image)
        with self.store.write(chat_id, revision=revision, label="picture") as w:
            node = w.get_node(node_id)
            self._require_alive(node)
            node = w.update_node(node_id, extras=with_image(node.extras, image))
        return WriteResult(w.chat, node)

    def set_hidden(
        self, chat_id: str, node_ids: Iterable[str], hidden: bool, *, revision: int
    ) -> WriteResult:
        """Hide messages from the model (still shown to the person), or show them again."""
        with self.store.write(
            chat_id, revision=revision, label="hide" if hidden else "unhide"
        ) as w:
            last: Node | None = None
            for node_id in node_ids:
                last = w.update_node(node_id, hidden=hidden)
        return WriteResult(w.chat, last)

    def hide_range(
        self, chat_id: str, start: int, end: int, *, revision: int, hidden: bool = True
    ) -> WriteResult:
        """`/hide start-end` and `/unhide`: positions on the active path, both ends included.

        algo-chat-ops.md §1.8: invalid when start > end, start < 0 or end past the last.
        """
        with self.store.write(
            chat_id, revision=revision, label="hide" if hidden else "unhide"
        ) as w:
            visible = [n for n in w.active_nodes() if not n.deleted]
            if start < 0 or start > end or end >= len(visible):
                raise TavernaError(
                    f"range {start}-{end} is outside 0-{len(visible) - 1}",
                    field="range",
                    code="range_is_outside_0",
                    params={"start": str(start), "end": str(end), "value": str(len(visible) - 1)},
                )
            for node in visible[start : end + 1]:
                if node.hidden != hidden:
                    w.update_node(node.id, hidden=hidden)
            first = w.get_node(visible[start].id)
        # The first message of the range: where the path's reading changed.
        return WriteResult(w.chat, first)

    def delete(self, chat_id: str, node_id: str, *, revision: int) -> WriteResult:
        """Delete one message (a restorable tombstone); later messages stay.

        Deleting the last message of the path moves the path to another candidate at
        that place if one is left (SillyTavern's delete swipe), else to the parent.
        """
        with self.store.write(chat_id, revision=revision, label="delete") as w:
            node = w.get_node(node_id)
            self._require_alive(node)
            w.update_node(node_id, deleted=True)
            if w.chat.active_leaf_id == node_id:
                self._retreat(w, node)
        gone = self.store.get_node(chat_id, node_id)
        self._emit(EventName.MESSAGE_DELETED, chat_id, gone)
        return WriteResult(w.chat, gone)

    def delete_from_here(self, chat_id: str, node_id: str, *, revision: int) -> WriteResult:
        """Delete a message of the active path and every message after it on that path."""
        with self.store.write(chat_id, revision=revision, label="delete from here") as w:
            path = w.active_nodes()
            ids = [n.id for n in path]
            if node_id not in ids:
                raise TavernaError(
                    "that message is not on the active path",
                    field="node_id",
                    code="message_not_on_active_path",
                )
            start = ids.index(node_id)
            for node in path[start:]:
                if not node.deleted:
                    w.update_node(node.id, deleted=True)
            head = path[start]
            w.set_selection(head.parent_id, None)
            w.set_active(head.parent_id)
        gone = self.store.get_node(chat_id, node_id)
        self._emit(EventName.MESSAGE_DELETED, chat_id, gone)
        return WriteResult(w.chat, gone)

    def restore(self, chat_id: str, node_id: str, *, revision: int) -> WriteResult:
        """Bring a deleted message back (its own tombstone only)."""
        with self.store.write(chat_id, revision=revision, label="restore") as w:
            node = w.get_node(node_id)
            if not node.deleted:
                raise TavernaError(
                    "that message is not deleted",
                    field="node_id",
                    code="that_message_is_not_deleted",
                )
            node = w.update_node(node_id, deleted=False)
        return WriteResult(w.chat, node)

    def _retreat(self, w: ChatWriter, node: Node) -> None:
        """After the active leaf was deleted: another candidate there, else the parent."""
        siblings = w.children(node.parent_id, include_deleted=True)
        ids = [s.id for s in siblings]
        index = ids.index(node.id)
        alive = [s for s in siblings if not s.deleted]
        if alive:
            after = [s for s in alive if ids.index(s.id) > index]
            choice = after[0] if after else alive[-1]
            self._activate(w, w.descend(choice.id))
        else:
            w.set_selection(node.parent_id, None)
            w.set_active(node.parent_id)
