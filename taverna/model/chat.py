"""The conversation tree: a chat, its nodes, the state recorded on them, and its history.

A chat is a tree of nodes. The *active path* (a root down to the active leaf) is
what a person reads as "the chat"; the model sees the active path minus hidden and
deleted nodes. Siblings are the candidates of one place in the conversation
(swipes, alternate greetings, edit-and-resend variants), ordered by creation; node
ids are UUIDv7, so ordering by id is ordering by creation.

State (chat variables, lorebook timers, the Author's Note settings, the summary)
is recorded on nodes copy-on-write: a node's state is the state of its nearest
ancestor-or-self that recorded one, else the chat's base state. Switching a
candidate or a branch therefore restores the state that belongs to that path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

import uuid6

from taverna.model.injection import ExtensionPosition, InjectionRole

JsonObject = dict[str, Any]


def new_id() -> str:
    """A fresh time-ordered id (UUIDv7, canonical text form) for chats, nodes and documents."""
    return str(uuid6.uuid7())


class NodeRole(StrEnum):
    """Who a message is from.

    `narrator` is SillyTavern's `/sys` message (`extra.type == "narrator"`): shown
    as a narration and sent to the model as a system message.
    """

    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    NARRATOR = "narrator"


@dataclass(frozen=True, slots=True)
class AuthorsNote:
    """The Author's Note settings of a chat at some point of its path.

    Defaults are SillyTavern's (formats-chat.md §3.1): position 1 = in chat at
    `depth`, role 0 = system, interval 1 = every user turn.
    """

    prompt: str = ""
    interval: int = 1
    position: int = 1  # SillyTavern's number, kept as stored; see `extension_position`
    depth: int = 4
    role: int = 0  # SillyTavern's number, kept as stored; see `injection_role`

    @property
    def extension_position(self) -> ExtensionPosition:
        """Where the note goes; a number SillyTavern does not know means in the chat."""
        if self.position in (0, 1, 2):
            return ExtensionPosition(self.position)
        return ExtensionPosition.IN_CHAT

    @property
    def injection_role(self) -> InjectionRole:
        """The role the note is sent as; a number SillyTavern does not know means system."""
        return InjectionRole.parse(self.role)

    def to_json(self) -> JsonObject:
        return {
            "prompt": self.prompt,
            "interval": self.interval,
            "position": int(self.position),
            "depth": self.depth,
            "role": int(self.role),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AuthorsNote:
        return cls(
            prompt=str(data.get("prompt", "")),
            interval=int(data.get("interval", 1)),
            position=int(data.get("position", 1)),
            depth=int(data.get("depth", 4)),
            role=int(data.get("role", 0)),
        )


@dataclass(frozen=True, slots=True)
class ChatState:
    """Everything about a chat that follows its path.

    `variables`: STscript chat ("local") variables. `timers`: lorebook timed-effect
    records in SillyTavern's `timedWorldInfo` shape (`{"sticky": {...}, "cooldown":
    {...}}`), kept as plain JSON so the lorebook engine owns their meaning.
    `authors_note`: the note settings, or None when the chat never set them.
    `summary`: the latest summary text; `summary_at`: the id of the node it was made
    at (the newest message it covers), so the node that carries it is known. `extras`: any other per-path value a feature
    or an imported chat wants to keep (unknown keys travel unchanged).
    """

    variables: Mapping[str, Any] = field(default_factory=dict)
    timers: Mapping[str, Any] = field(default_factory=dict)
    authors_note: AuthorsNote | None = None
    summary: str | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)
    summary_at: str | None = None

    def to_json(self) -> JsonObject:
        out: JsonObject = {
            "variables": dict(self.variables),
            "timers": dict(self.timers),
            "authors_note": self.authors_note.to_json() if self.authors_note else None,
            "summary": self.summary,
            "extras": dict(self.extras),
        }
        if self.summary_at is not None:
            out["summary_at"] = self.summary_at
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChatState:
        note = data.get("authors_note")
        return cls(
            variables=dict(data.get("variables") or {}),
            timers=dict(data.get("timers") or {}),
            authors_note=AuthorsNote.from_json(note) if isinstance(note, Mapping) else None,
            summary=data.get("summary"),
            extras=dict(data.get("extras") or {}),
            summary_at=data.get("summary_at"),
        )


EMPTY_STATE = ChatState()


@dataclass(frozen=True, slots=True)
class GenerationInfo:
    """How a generated message came to be: which API and model, when, and at what cost."""

    provider: str = ""
    model: str = ""
    started: datetime | None = None
    finished: datetime | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> JsonObject:
        return {
            "provider": self.provider,
            "model": self.model,
            "started": self.started.isoformat() if self.started else None,
            "finished": self.finished.isoformat() if self.finished else None,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "finish_reason": self.finish_reason,
            "extras": dict(self.extras),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GenerationInfo:
        started = data.get("started")
        finished = data.get("finished")
        return cls(
            provider=str(data.get("provider", "")),
            model=str(data.get("model", "")),
            started=datetime.fromisoformat(started) if started else None,
            finished=datetime.fromisoformat(finished) if finished else None,
            prompt_tokens=data.get("prompt_tokens"),
            completion_tokens=data.get("completion_tokens"),
            finish_reason=data.get("finish_reason"),
            extras=dict(data.get("extras") or {}),
        )


@dataclass(frozen=True, slots=True)
class CharacterRef:
    """A chat participant: the character's name, and its library document id when known."""

    name: str
    document_id: str | None = None


@dataclass(frozen=True, slots=True)
class Chat:
    """One conversation: who takes part, where its active path ends, and its revision.

    `characters` holds one character for a solo chat or the members of a group
    (`group_id` then names the group's library document). `metadata` keeps
    SillyTavern `chat_metadata` keys that are not path state (chat-bound lorebook,
    persona lock, scenario override, integrity, ...) and header extras, so they come
    back out on export. `revision` increases with every change; a write names the
    revision it read. `owner` separates the data of different accounts.
    """

    id: str
    title: str
    characters: tuple[CharacterRef, ...] = ()
    group_id: str | None = None
    user_name: str = ""
    active_leaf_id: str | None = None
    active_branch_id: str | None = None
    base_state: ChatState = EMPTY_STATE
    metadata: Mapping[str, Any] = field(default_factory=dict)
    created: datetime | None = None
    updated: datetime | None = None
    revision: int = 0
    owner: str = ""


@dataclass(frozen=True, slots=True)
class Node:
    """One message of the tree.

    `extras` carries SillyTavern message fields this model does not name
    (`send_date`, `extra`, `swipe_info` item, `force_avatar`, ...), so an import
    exports unchanged. `state` is the state this node recorded (None: it inherits
    its parent's). `deleted` is a tombstone: the node is kept and can be restored.
    `depth` is the number of ancestors. `revision` is the chat revision at which the
    node last changed.
    """

    id: str
    chat_id: str
    parent_id: str | None
    role: NodeRole
    content: str
    speaker: str = ""
    hidden: bool = False
    deleted: bool = False
    created: datetime | None = None
    depth: int = 0
    generation: GenerationInfo | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)
    state: ChatState | None = None
    revision: int = 0

    def with_changes(self, **changes: Any) -> Node:
        """A copy of this node with some fields replaced."""
        return replace(self, **changes)


@dataclass(frozen=True, slots=True)
class PathEntry:
    """A node on the active path with its place among its candidates (`‹index+1/count›`).

    `position` is the index on the path as a person sees it (deleted nodes are not
    counted), the number SillyTavern's `/hide 0-4` ranges use.
    """

    node: Node
    position: int
    candidate_index: int
    candidate_count: int


@dataclass(frozen=True, slots=True)
class ActivePath:
    """The chat as read: the active path from the root to the active leaf, and its state."""

    chat: Chat
    entries: tuple[PathEntry, ...]
    state: ChatState

    @property
    def nodes(self) -> tuple[Node, ...]:
        return tuple(entry.node for entry in self.entries)

    @property
    def leaf(self) -> Node | None:
        return self.entries[-1].node if self.entries else None

    def for_model(self) -> tuple[Node, ...]:
        """The messages the model may see: hidden ones are left out."""
        return tuple(entry.node for entry in self.entries if not entry.node.hidden)


@dataclass(frozen=True, slots=True)
class PathWindow:
    """A stretch of the active path as a page shows it, read without the rest of the path.

    `entries` are live messages in path order, each with its `position` on the whole
    path; `start` is the position the window begins at (also when it is empty) and
    `total` counts the live messages of the whole path, so a page knows how far it is
    from either end without reading them.
    """

    chat: Chat
    entries: tuple[PathEntry, ...]
    start: int
    total: int

    @property
    def has_older(self) -> bool:
        return self.start > 0

    @property
    def has_newer(self) -> bool:
        return self.start + len(self.entries) < self.total


@dataclass(frozen=True, slots=True)
class ChatListing:
    """A chat as listed: the chat plus counts that need no path walk."""

    chat: Chat
    path_length: int
    node_count: int
    branch_count: int
    checkpoint_count: int


@dataclass(frozen=True, slots=True)
class PathTail:
    """The end of a path as a turn reads it: its last live messages, root side first.

    `before` counts the live messages above them on the path and `visible_before` those
    of them not hidden; `state` is the state in force at the path's last node, wherever
    above it was recorded.
    """

    nodes: tuple[Node, ...]
    before: int
    visible_before: int
    state: ChatState


@dataclass(frozen=True, slots=True)
class Branch:
    """A named pointer to a leaf; appending while on a branch moves its head along."""

    id: str
    chat_id: str
    name: str
    head_id: str | None
    created: datetime | None = None


@dataclass(frozen=True, slots=True)
class BranchSummary:
    """A branch as listed: its head, its length (visible path) and its last message."""

    branch: Branch
    length: int
    last_message: Node | None
    active: bool


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A named pointer to one node that stays where it was put."""

    id: str
    chat_id: str
    name: str
    node_id: str
    created: datetime | None = None


class RevisionKind(StrEnum):
    """What made a revision: creating or importing the chat, an operation, an undo, a redo."""

    CREATE = "create"
    OPERATION = "operation"
    UNDO = "undo"
    REDO = "redo"


@dataclass(frozen=True, slots=True)
class Revision:
    """One entry of a chat's history: every change to a chat is one revision.

    `label` names the operation (`append`, `swipe`, `edit`, ...); for an undo or a
    redo, `target` is the number of the revision it reverted or re-applied.
    `undone` tells whether an operation's effect is currently reverted.
    """

    chat_id: str
    number: int
    kind: RevisionKind
    label: str
    created: datetime | None = None
    target: int | None = None
    undone: bool = False


@dataclass(frozen=True, slots=True)
class ContentVersion:
    """A past or present text of a node, and the revision that set it."""

    node_id: str
    revision: int
    content: str
    created: datetime | None = None


@dataclass(frozen=True, slots=True)
class ChatTree:
    """A whole chat at once: every node (parents before children), branches, checkpoints.

    `selections` maps a parent id (`""` for the roots) to the child chosen there
    last, which is where a switch to that place continues.
    """

    chat: Chat
    nodes: tuple[Node, ...]
    branches: tuple[Branch, ...] = ()
    checkpoints: tuple[Checkpoint, ...] = ()
    selections: Mapping[str, str] = field(default_factory=dict)

    def children(self) -> dict[str | None, list[Node]]:
        """Children of every node, candidates in creation order (None: the roots)."""
        result: dict[str | None, list[Node]] = {}
        for node in self.nodes:
            result.setdefault(node.parent_id, []).append(node)
        for siblings in result.values():
            siblings.sort(key=lambda n: n.id)
        return result


def effective_state(path: Sequence[Node], base: ChatState) -> ChatState:
    """The state at the end of `path`: the last recorded one along it, else `base`."""
    for node in reversed(path):
        if node.state is not None:
            return node.state
    return base
