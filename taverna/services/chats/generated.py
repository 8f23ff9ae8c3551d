"""Generated messages: replies, candidates, continues and tool steps stored by the rules
the person's own writes follow.

What differs is only where they land: the person may have moved on while the model
answered, so a generated message becomes the active leaf only if the person is still
where it goes (`_arrive`). A part of `ChatService`, the one writer of the tree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from taverna.errors import Conflict
from taverna.model.chat import ChatState, GenerationInfo, Node, NodeRole
from taverna.services.chats.generated_reply import ToolStep, recorded_state
from taverna.services.chats.write_rules import WriteResult, WriteRules
from taverna.services.plugins import EventName
from taverna.store.repository import ChatWriter


def _is_tool_step(node: Node) -> bool:
    """A hidden message recording the tool calls the model made on the way to a reply."""
    return node.role is NodeRole.SYSTEM and node.hidden and "tool_invocations" in node.extras


class GeneratedMessages(WriteRules):
    """The chat service's writes of what a generation made (a part of `ChatService`)."""

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
            branched = bool(steps_above or tool_steps)
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
            if not branched:
                self._arrive(w, node, at=beside)
            elif followed:
                w.set_selection(at, node.id)
                w.set_active(node.id)
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
