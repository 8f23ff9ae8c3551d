"""Chats and their trees: how a store creates, reads and writes them.

Chats are changed only inside `ChatRepository.write(...)`: a unit of work bound to
one chat that checks the revision the caller read, records every change it makes
(so the revision can be undone and redone), and commits as one transaction with
one new revision number.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from taverna.model.chat import (
    ActivePath,
    Branch,
    BranchSummary,
    CharacterRef,
    Chat,
    ChatListing,
    ChatState,
    ChatTree,
    Checkpoint,
    ContentVersion,
    GenerationInfo,
    Node,
    NodeRole,
    PathWindow,
    Revision,
)
from taverna.store.repository.unset import UNSET


@dataclass(frozen=True, slots=True)
class NewChat:
    """What creating a chat needs."""

    title: str
    characters: tuple[CharacterRef, ...] = ()
    group_id: str | None = None
    user_name: str = ""
    base_state: ChatState = field(default_factory=ChatState)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    owner: str = ""
    id: str | None = None
    created: datetime | None = None


class ChatWriter(ABC):
    """One chat's unit of work: reads see earlier writes of the same unit.

    Every mutating method records the old and new value so the whole unit can be
    undone and redone as one revision. `revision` is the number this unit commits as.
    """

    chat_id: str
    revision: int

    @property
    @abstractmethod
    def chat(self) -> Chat:
        """The chat as it stands inside this unit of work."""

    @abstractmethod
    def get_node(self, node_id: str) -> Node:
        """The node `node_id` of this chat; NotFound otherwise."""

    @abstractmethod
    def children(self, parent_id: str | None, *, include_deleted: bool = False) -> list[Node]:
        """Children of `parent_id` (None: the roots) in creation order."""

    @abstractmethod
    def path_to(self, node_id: str) -> list[Node]:
        """The nodes from a root down to `node_id`, both included (deleted ones too)."""

    @abstractmethod
    def active_nodes(self) -> list[Node]:
        """The active path from the root to the active leaf (deleted ones too)."""

    @abstractmethod
    def state_at(self, node_id: str | None) -> ChatState:
        """The state in force at `node_id` (None: the chat's base state)."""

    @abstractmethod
    def selection(self, parent_id: str | None) -> str | None:
        """The child last chosen under `parent_id` (None: among the roots)."""

    @abstractmethod
    def selections(self) -> dict[str, str]:
        """Every remembered choice: parent id (`""` for the roots) -> chosen child id."""

    @abstractmethod
    def descend(self, node_id: str) -> str:
        """Where the path below `node_id` ends when following the remembered choices."""

    @abstractmethod
    def insert_node(
        self,
        parent_id: str | None,
        role: NodeRole,
        content: str,
        *,
        speaker: str = "",
        hidden: bool = False,
        extras: Mapping[str, Any] | None = None,
        generation: GenerationInfo | None = None,
        state: ChatState | None = None,
        created: datetime | None = None,
        node_id: str | None = None,
    ) -> Node:
        """Add a node under `parent_id`; its depth comes from the parent (no path walk).

        `node_id`: an id chosen beforehand (a new time-ordered one when None)."""

    @abstractmethod
    def update_node(
        self,
        node_id: str,
        *,
        content: str = UNSET,
        speaker: str = UNSET,
        hidden: bool = UNSET,
        deleted: bool = UNSET,
        extras: Mapping[str, Any] = UNSET,
        generation: GenerationInfo | None = UNSET,
        state: ChatState | None = UNSET,
    ) -> Node:
        """Change fields of a node; untouched fields keep their value."""

    @abstractmethod
    def set_selection(self, parent_id: str | None, child_id: str | None) -> None:
        """Remember `child_id` as the chosen child under `parent_id` (None: forget)."""

    @abstractmethod
    def set_active(self, leaf_id: str | None, *, branch_id: str | None = UNSET) -> None:
        """Make `leaf_id` the active leaf; the active branch (or `branch_id`) points there."""

    @abstractmethod
    def update_chat(
        self,
        *,
        title: str = UNSET,
        characters: tuple[CharacterRef, ...] = UNSET,
        user_name: str = UNSET,
        base_state: ChatState = UNSET,
        metadata: Mapping[str, Any] = UNSET,
    ) -> Chat:
        """Change chat fields other than the active leaf and branch."""

    @abstractmethod
    def branches(self) -> list[Branch]:
        """The chat's branches in creation order."""

    @abstractmethod
    def put_branch(self, branch: Branch) -> None:
        """Add or change a branch."""

    @abstractmethod
    def remove_branch(self, branch_id: str) -> None:
        """Remove a branch pointer (its nodes stay)."""

    @abstractmethod
    def checkpoints(self) -> list[Checkpoint]:
        """The chat's checkpoints in creation order."""

    @abstractmethod
    def put_checkpoint(self, checkpoint: Checkpoint) -> None:
        """Add or change a checkpoint."""

    @abstractmethod
    def remove_checkpoint(self, checkpoint_id: str) -> None:
        """Remove a checkpoint pointer."""

    @abstractmethod
    def undo(self) -> Revision:
        """Revert the newest operation not yet undone; NotFound when there is none."""

    @abstractmethod
    def redo(self) -> Revision:
        """Re-apply the operation undone last; NotFound when there is none."""


class ChatRepository(ABC):
    """Chats and their trees."""

    @abstractmethod
    def create_chat(self, new: NewChat) -> Chat:
        """Create an empty chat at revision 1 with a branch named `main`."""

    @abstractmethod
    def import_tree(
        self,
        new: NewChat,
        nodes: Sequence[Node],
        *,
        active_leaf_id: str | None,
        branches: Sequence[Branch] = (),
        checkpoints: Sequence[Checkpoint] = (),
        selections: Mapping[str, str] | None = None,
    ) -> Chat:
        """Create a chat with a whole tree in one bulk transaction (import, benchmarks).

        `nodes` must list parents before children; their `depth` and `chat_id` are
        recomputed. Without `selections`, each parent selects its child on the active
        path, else its newest child. Without branches, a `main` branch points at the
        active leaf; `branches[0]` is the active branch otherwise.
        """

    @abstractmethod
    def write(
        self, chat_id: str, *, revision: int, label: str
    ) -> AbstractContextManager[ChatWriter]:
        """A unit of work on chat `chat_id` that read `revision`; StaleRevision if it moved on."""

    @abstractmethod
    def get_chat(self, chat_id: str) -> Chat:
        """The chat; NotFound if absent."""

    @abstractmethod
    def list_chats(self, *, owner: str = "", character: str | None = None) -> list[ChatListing]:
        """Chats of `owner`, newest first, optionally those with a character of that name or id."""

    @abstractmethod
    def delete_chat(self, chat_id: str, *, revision: int) -> None:
        """Remove a chat and everything in it (not undoable: export or back it up first).

        The chat is gone from every read and listing when this returns; a long chat's
        rows are removed afterwards in the background (`purge_deleted`), in short
        transactions that never keep other chats waiting.
        """

    @abstractmethod
    def purge_deleted(self) -> int:
        """Remove now whatever deleted chats left (short transactions); the chats finished."""

    @abstractmethod
    def purge_in_background(self) -> None:
        """Remove what deleted chats left on a background thread: what a delete does for
        a long chat, and what a start does after a crash or shutdown mid-removal."""

    @abstractmethod
    def get_node(self, chat_id: str, node_id: str) -> Node:
        """One node of a chat; NotFound if absent."""

    @abstractmethod
    def children(self, chat_id: str, parent_id: str | None) -> list[Node]:
        """Non-deleted children of a node (None: roots) in creation order."""

    @abstractmethod
    def active_path(
        self, chat_id: str, *, include_deleted: bool = False, tail: int | None = None
    ) -> ActivePath:
        """The chat as read: its active path with candidate counts and the leaf's state.

        With `tail`, only the last `tail` live messages are read (a long chat's page
        shows its end); their `position`s are still those on the whole path.
        """

    @abstractmethod
    def path_before(self, chat_id: str, node_id: str | None, *, limit: int) -> PathWindow:
        """The `limit` live messages just above `node_id` on its path, oldest first.

        None reads the end of the active path instead (its leaf included). The climb
        stops once `limit` live messages are found, so a page of a long chat costs the
        page; positions are still those on the whole path (with deleted messages, the
        climb that counts them goes no higher than the shallowest one).
        """

    @abstractmethod
    def path_after(self, chat_id: str, node_id: str | None, *, limit: int) -> PathWindow:
        """The `limit` live messages just after `node_id` on the active path, oldest first.

        None reads from the path's first message. The walk follows the choice remembered
        at each fork (the active path's own, by the tree's invariant) and stops at the
        active leaf, so it costs the page, not the distance to the end.
        """

    @abstractmethod
    def path_at(self, chat_id: str, position: int, *, limit: int) -> PathWindow:
        """The `limit` live messages of the active path from `position` on (moved back so
        the page is full when it would run past the end): a page anywhere in the chat, as a
        scrollbar's drag asks for it. Costs a climb over ids from the leaf, and the page.
        """

    @abstractmethod
    def path_to(self, chat_id: str, node_id: str) -> list[Node]:
        """The nodes from a root down to `node_id`."""

    @abstractmethod
    def state_at(self, chat_id: str, node_id: str | None) -> ChatState:
        """The state in force at a node (None: the base state)."""

    @abstractmethod
    def tree(self, chat_id: str) -> ChatTree:
        """The whole tree, parents before children."""

    @abstractmethod
    def branches(self, chat_id: str) -> list[BranchSummary]:
        """Branches with their head, visible length and last message."""

    @abstractmethod
    def checkpoints(self, chat_id: str) -> list[Checkpoint]:
        """Checkpoints in creation order."""

    @abstractmethod
    def revisions(self, chat_id: str, *, limit: int = 100) -> list[Revision]:
        """The newest revisions first."""

    @abstractmethod
    def content_history(self, chat_id: str, node_id: str) -> list[ContentVersion]:
        """Every text a node has had, oldest first (the current one last)."""
