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
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from taverna.errors import Conflict, NotFound, TavernaError
from taverna.model.chat import (
    ActivePath,
    Branch,
    BranchSummary,
    CharacterRef,
    Chat,
    ChatState,
    Checkpoint,
    ContentVersion,
    GenerationInfo,
    Node,
    NodeRole,
    PathWindow,
    Revision,
    new_id,
)
from taverna.services.chats.generated_reply import ToolStep, recorded_state
from taverna.services.chats.images import ImageLibrary, with_image
from taverna.services.chats.insertion import Insertion
from taverna.services.chats.insertion import WriteResult as WriteResult
from taverna.services.plugins import Event, EventBus, EventName
from taverna.store.repository import UNSET, ChatWriter, NewChat, Store


def _is_tool_step(node: Node) -> bool:
    """A hidden message recording the tool calls the model made on the way to a reply."""
    return node.role is NodeRole.SYSTEM and node.hidden and "tool_invocations" in node.extras


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Rewrite:
    """What a message's storage rules make of it: its text, and its reasoning if any."""

    content: str
    reasoning: str | None = None


class Rewriter(Protocol):
    """Storage rules for new and edited messages (None: the message stays as it is).

    `edit`: a person edited the text; `slash`: a script command wrote the message."""

    def __call__(self, chat: Chat, node: Node, *, edit: bool, slash: bool) -> Rewrite | None: ...


# Branch lists kept, each with the chat revision it was read at: the chats viewed last.
BRANCH_LISTS_KEPT = 512


class ChatService(Insertion):
    """The use cases of a conversation tree, shared by the CLI, the server and generation."""

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
        self._branches: OrderedDict[str, tuple[int, list[BranchSummary]]] = OrderedDict()
        self._branches_lock = threading.Lock()

    def _emit(self, name: EventName, chat_id: str, node: Node | None, *, kind: str = "") -> None:
        self.events.emit(
            Event(name, chat_id, node.id if node else None, node.content if node else "", kind)
        )

    # ----------------------------------------------------------------- reading

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
    ) -> PathWindow:
        """A page of the active path: its last `limit` messages, or those just older than
        `before` or just newer than `after`. Costs the page at any chat length."""
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

    def candidates(self, chat_id: str, node_id: str) -> list[Node]:
        """The candidates at a node's place (itself and its siblings), in creation order."""
        node = self.store.get_node(chat_id, node_id)
        return self.store.children(chat_id, node.parent_id)

    def state_at(self, chat_id: str, node_id: str | None = None) -> ChatState:
        """The state in force at a node; without one, at the end of the active path."""
        if node_id is None:
            chat = self.store.get_chat(chat_id)
            return self.store.state_at(chat_id, chat.active_leaf_id)
        return self.store.state_at(chat_id, node_id)

    def list_branches(self, chat_id: str, *, revision: int | None = None) -> list[BranchSummary]:
        """The chat's branches. `revision`: the revision the caller read the chat at; the
        list made at that revision is kept and given again (every write to a chat moves its
        revision on, on any worker), so a page's view after each reply costs no queries."""
        if revision is None:
            return self.store.branches(chat_id)
        with self._branches_lock:
            kept = self._branches.get(chat_id)
            if kept is not None and kept[0] == revision:
                self._branches.move_to_end(chat_id)
                return list(kept[1])
        branches = self.store.branches(chat_id)
        with self._branches_lock:
            kept = self._branches.get(chat_id)
            if kept is None or kept[0] <= revision:
                self._branches[chat_id] = (revision, branches)
                self._branches.move_to_end(chat_id)
            while len(self._branches) > BRANCH_LISTS_KEPT:
                self._branches.popitem(last=False)
        return list(branches)

    def list_checkpoints(self, chat_id: str) -> list[Checkpoint]:
        return self.store.checkpoints(chat_id)

    def history(self, chat_id: str, node_id: str) -> list[ContentVersion]:
        """Every text a message has had, oldest first."""
        return self.store.content_history(chat_id, node_id)

    def revisions(self, chat_id: str, *, limit: int = 100) -> list[Revision]:
        return self.store.revisions(chat_id, limit=limit)

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

    # ------------------------------------------------------- generated messages
    #
    # A generation (or a draft it left) writes here, by the rules the person's own
    # writes follow; what differs is only where it lands: the person may have moved
    # on while the model answered, so a generated message becomes the active leaf only
    # if the person is still where it goes (`_arrive`).

    def add_reply(
        self,
        chat_id: str,
        after: str | None,
        content: str,
        *,
        revision: int,
        speaker: str,
        role: NodeRole = NodeRole.ASSISTANT,
        generation: GenerationInfo | None = None,
        turn_state: Mapping[str, Any] | None = None,
        tool_steps: Sequence[ToolStep] = (),
        label: str = "reply",
    ) -> WriteResult:
        """Store a generated reply after the message `after` (None: at the chat's start),
        with the tool steps the model took on the way between them.

        Each new message becomes the active leaf only if the person is still at its
        parent. `turn_state`: the prompt's state (lorebook timers, variables), recorded
        on the reply where it differs from what the reply inherits. `role`: a kept
        impersonation is the person's message.
        """
        with self.store.write(chat_id, revision=revision, label=label) as w:
            parent = after
            for step in tool_steps:
                node = self._insert_tool_step(w, parent, step)
                self._arrive(w, node, at=parent)
                parent = node.id
            node = w.insert_node(
                parent,
                role,
                content,
                speaker=speaker,
                generation=generation,
                state=self._recorded(w, turn_state, parent),
                created=self.clock(),
            )
            self._arrive(w, node, at=parent)
        result = self._rewritten(WriteResult(w.chat, node))
        sent = role is NodeRole.USER  # a kept impersonation is the person's message
        self._emit(
            EventName.MESSAGE_SENT if sent else EventName.MESSAGE_RECEIVED,
            chat_id,
            result.node,
            kind=label,
        )
        return result

    def add_candidate(
        self,
        chat_id: str,
        beside: str,
        content: str,
        *,
        revision: int,
        speaker: str = "",
        generation: GenerationInfo | None = None,
        turn_state: Mapping[str, Any] | None = None,
        replaces: bool = False,
        label: str | None = None,
        tool_steps: Sequence[ToolStep] = (),
    ) -> WriteResult:
        """Store a generated candidate beside the reply `beside` (a swipe); with
        `replaces` (a regenerate) `beside` is then deleted, restorably.

        The candidate becomes the shown one only if the person is still at `beside`.
        It speaks as `beside` did unless `speaker` names another (a group member
        answering in another's place), and records the
        turn's state over the state before `beside`: a swipe replays that turn.

        The candidate goes below the `tool_steps` it took, branching where the old
        reply's own tool steps began: the path shows the calls of the reply it leads to,
        never those of the other. A regenerate deletes the old reply's steps with it
        (restorably); a swipe keeps them on the old reply's branch.
        """
        label = label or ("regenerate" if replaces else "swipe")
        with self.store.write(chat_id, revision=revision, label=label) as w:
            old = w.get_node(beside)
            parent = old.parent_id
            steps_above: list[str] = []
            while parent is not None and _is_tool_step(step := w.get_node(parent)):
                steps_above.append(step.id)
                parent = step.parent_id
            if steps_above or tool_steps:
                followed = w.chat.active_leaf_id == beside
                at = parent
                for tool_step in tool_steps:
                    inserted = self._insert_tool_step(w, at, tool_step)
                    if followed:
                        w.set_selection(at, inserted.id)
                    at = inserted.id
                for step_id in steps_above if replaces else ():
                    w.update_node(step_id, deleted=True)
                node = w.insert_node(
                    at,
                    NodeRole.ASSISTANT,
                    content,
                    speaker=speaker or old.speaker,
                    generation=generation,
                    state=self._recorded(w, turn_state, parent),
                    created=self.clock(),
                )
                if followed:
                    w.set_selection(at, node.id)
                    w.set_active(node.id)
            else:
                node = w.insert_node(
                    parent,
                    NodeRole.ASSISTANT,
                    content,
                    speaker=speaker or old.speaker,
                    generation=generation,
                    state=self._recorded(w, turn_state, parent),
                    created=self.clock(),
                )
                self._arrive(w, node, at=beside)
            if replaces:
                w.update_node(beside, deleted=True)
        result = self._rewritten(WriteResult(w.chat, node))
        self._emit(EventName.MESSAGE_RECEIVED, chat_id, result.node, kind=label)
        return result

    def _insert_tool_step(self, w: ChatWriter, parent: str | None, step: ToolStep) -> Node:
        """A tool call and its result, stored as a hidden system message under `parent`."""
        return w.insert_node(
            parent,
            NodeRole.SYSTEM,
            step.content,
            speaker=step.name,
            hidden=True,
            extras=step.extras,
            created=self.clock(),
        )

    def extend(
        self,
        chat_id: str,
        node_id: str,
        text: str,
        *,
        revision: int,
        expected: str | None = None,
        trim_end: bool = False,
        turn_state: Mapping[str, Any] | None = None,
        label: str = "continue",
    ) -> WriteResult:
        """Extend a message by a continue: `text` goes on at its end.

        `expected`: the text the continue started from; a message edited or deleted
        since is a Conflict, as the continuation no longer fits it. `trim_end`: the API
        continued the text without its trailing whitespace (Anthropic's prefill), so the
        message loses it too. `turn_state` is recorded on the message where it differs.
        """
        with self.store.write(chat_id, revision=revision, label=label) as w:
            current = w.get_node(node_id)
            if expected is not None and (current.content != expected or current.deleted):
                raise Conflict(
                    "the message changed while it was being continued",
                    code="message_changed_while_it_was",
                )
            base = current.content.rstrip() if trim_end else current.content
            state = self._recorded(w, turn_state, node_id)
            if state is None:
                node = w.update_node(node_id, content=base + text)
            else:
                node = w.update_node(node_id, content=base + text, state=state)
        return self._rewritten(WriteResult(w.chat, node))

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

    # ----------------------------------------------------- branches, checkpoints

    def branch_from(
        self, chat_id: str, node_id: str, name: str, *, revision: int, switch: bool = True
    ) -> WriteResult:
        """A named branch ending at `node_id`; switched to unless told not to.

        The branch's path is the path to `node_id`, so it inherits all state up to there.
        """
        name = self._name(name)
        with self.store.write(chat_id, revision=revision, label="branch") as w:
            node = w.get_node(node_id)
            self._require_alive(node)
            self._unique_branch_name(w, name)
            branch = Branch(
                id=new_id(), chat_id=chat_id, name=name, head_id=node_id, created=self.clock()
            )
            w.put_branch(branch)
            if switch:
                self._activate(w, node_id, branch_id=branch.id)
        return WriteResult(w.chat, node)

    def switch_branch(self, chat_id: str, branch_id: str, *, revision: int) -> WriteResult:
        """Make a branch active: the path becomes the path to its head."""
        with self.store.write(chat_id, revision=revision, label="switch branch") as w:
            branch = self._branch(w, branch_id)
            self._activate(w, branch.head_id, branch_id=branch.id)
        self._emit(EventName.CHAT_CHANGED, chat_id, None, kind="switch branch")
        return WriteResult(w.chat)

    def rename_branch(
        self, chat_id: str, branch_id: str, name: str, *, revision: int
    ) -> WriteResult:
        name = self._name(name)
        with self.store.write(chat_id, revision=revision, label="rename branch") as w:
            branch = self._branch(w, branch_id)
            if branch.name != name:
                self._unique_branch_name(w, name)
                w.put_branch(Branch(branch.id, chat_id, name, branch.head_id, branch.created))
        return WriteResult(w.chat)

    def delete_branch(self, chat_id: str, branch_id: str, *, revision: int) -> WriteResult:
        """Remove a branch pointer (not its messages); the active branch cannot go."""
        with self.store.write(chat_id, revision=revision, label="delete branch") as w:
            self._branch(w, branch_id)
            if w.chat.active_branch_id == branch_id:
                raise TavernaError(
                    "switch to another branch first",
                    field="branch_id",
                    code="switch_to_another_branch_first",
                )
            w.remove_branch(branch_id)
        return WriteResult(w.chat)

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

    # -------------------------------------------------------------------- state

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

    # --------------------------------------------------------------- undo/redo

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

    # ---------------------------------------------------------------- helpers

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
    def _branch(w: ChatWriter, branch_id: str) -> Branch:
        for branch in w.branches():
            if branch.id == branch_id:
                return branch
        raise NotFound("no such branch", field="branch_id", code="no_such_branch")

    @staticmethod
    def _unique_branch_name(w: ChatWriter, name: str) -> None:
        if any(b.name == name for b in w.branches()):
            raise TavernaError(
                f"a branch named {name!r} exists",
                field="name",
                code="branch_named_exists",
                params={"name": str(name)},
            )

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

    @staticmethod
    def _arrive(w: ChatWriter, node: Node, *, at: str | None) -> None:
        """A message the person did not place (a generated one, a kept draft) becomes
        the active leaf only if the person is still at `at`, where it goes: its parent,
        or the candidate it stands beside. Otherwise it waits there, unseen.

        The person is then on the path down to the node's parent, whose choices are
        remembered already: only the choice at the parent is written.
        """
        if w.chat.active_leaf_id == at:
            w.set_selection(node.parent_id, node.id)
            w.set_active(node.id)

    @staticmethod
    def _recorded(
        w: ChatWriter, turn_state: Mapping[str, Any] | None, at: str | None
    ) -> ChatState | None:
        """What a generated message records of its turn's state, over the state at `at`."""
        if not turn_state:
            return None
        return recorded_state(turn_state, w.state_at(at))

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
