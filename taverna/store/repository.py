"""The repository interface: what the services may ask of a store, whatever its database.

Chats are changed only inside `ChatRepository.write(...)`: a unit of work bound to
one chat that checks the revision the caller read, records every change it makes
(so the revision can be undone and redone), and commits as one transaction with
one new revision number. Library documents (characters, lorebooks, presets,
personas, settings, connections, groups) are versioned JSON documents with an
optional binary blob (a card's PNG, say).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
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
    PathTail,
    PathWindow,
    Revision,
)


class _Unset:
    """Marks an argument that was not given (None is a meaningful value for some fields)."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


@dataclass(frozen=True, slots=True)
class Document:
    """A library item: `kind` (character, lorebook, preset, persona, settings, connection,
    group, ...), a `name`, its JSON `data`, an optional `blob`, and a `revision`."""

    id: str
    kind: str
    name: str
    data: Mapping[str, Any]
    blob: bytes | None = None
    revision: int = 1
    created: datetime | None = None
    updated: datetime | None = None
    owner: str = ""


@dataclass(frozen=True, slots=True)
class DocumentVersion:
    """Which version of a document is stored; `(id, revision, updated)` names its content."""

    id: str
    kind: str
    name: str
    revision: int
    updated: datetime | None = None


@dataclass(frozen=True, slots=True)
class Account:
    """A person who logs in to a server that runs with accounts; `id` is the `owner` of
    their rows. Quotas of None are no limit."""

    id: str
    name: str
    password_hash: str
    admin: bool = False
    quota_bytes: int | None = None
    quota_generations: int | None = None
    created: datetime | None = None
    # A disabled account keeps its data but may not log in (its sessions end).
    disabled: bool = False


@dataclass(frozen=True, slots=True)
class AccountRemoval:
    """What went with a removed account: its chats and its library documents (pictures,
    connections and drafts among them)."""

    chats: int
    documents: int


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


class TurnReads(ABC):
    """What building a turn reads: the end of a path, what changed since a revision,
    and the stored token counts of message texts."""

    @abstractmethod
    def path_tail(
        self, chat_id: str, node_id: str, *, limit: int, counted: bool = True
    ) -> PathTail:
        """The last `limit` live messages of the path ending at `node_id` (itself included).

        The climb stops there, so a long chat costs what is read; `before` counts the
        live messages above (left 0, unread, when not `counted`), and `state` is the
        state in force at `node_id`.
        """

    @abstractmethod
    def user_messages_to(self, chat_id: str, node_id: str) -> int:
        """How many live messages of the person are on the path down to `node_id` (the
        author's note interval counts them; a walk of the whole path)."""

    @abstractmethod
    def changed_nodes(self, chat_id: str, since: int) -> frozenset[str]:
        """Ids of the nodes written by revisions after `since` (an undo or a redo counts
        the nodes of the revision it undid or redid)."""

    @abstractmethod
    def get_nodes(self, chat_id: str, node_ids: Sequence[str]) -> list[Node]:
        """These nodes of a chat, in no order; ids it does not have are left out."""

    @abstractmethod
    def token_counts(self, tokenizer: str, texts: Sequence[str]) -> dict[str, int]:
        """The stored token counts of these texts with `tokenizer`, by text."""

    @abstractmethod
    def save_token_counts(self, tokenizer: str, counts: Mapping[str, int]) -> None:
        """Keep token counts of message texts the store holds (others are ignored)."""


class SentPromptRepository(ABC):
    """The prompt each stored reply was generated from, as sent: an opaque record per
    reply, kept apart from the tree and read one reply at a time."""

    @abstractmethod
    def save_sent_prompt(self, chat_id: str, node_id: str, record: bytes) -> None:
        """Keep `record` for the reply `node_id` (replacing one kept before)."""

    @abstractmethod
    def sent_prompt(self, chat_id: str, node_id: str) -> bytes | None:
        """The record kept for the reply `node_id`, or None."""


class DocumentRepository(ABC):
    """Library documents."""

    @abstractmethod
    def put_document(
        self,
        kind: str,
        name: str,
        data: Mapping[str, Any],
        *,
        blob: bytes | None = UNSET,
        id: str | None = None,
        revision: int | None = None,
        owner: str = "",
    ) -> Document:
        """Create (no `id`, or an unknown `id`) or replace a document.

        Replacing needs the `revision` read; a stale one raises StaleRevision. An
        omitted `blob` keeps the stored one.
        """

    @abstractmethod
    def document_versions(
        self,
        kind: str | Sequence[str],
        *,
        owner: str = "",
        names: Sequence[str] | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[DocumentVersion]:
        """Which documents of a kind (or of several) there are (with these names, these
        ids) and their revisions, oldest first.

        Reads no data: what a cache of parsed documents checks before it trusts itself.
        """

    @abstractmethod
    def versions_of(
        self,
        *,
        owner: str,
        kinds: Sequence[str] = (),
        ids: Sequence[str] = (),
        names: Mapping[str, Sequence[str]] | None = None,
    ) -> list[DocumentVersion]:
        """In one query, the versions of every document of `kinds`, of the documents
        `ids`, and, for each kind in `names`, of its documents with those names; oldest
        first. What a turn checks of the library before it trusts what it parsed."""

    @abstractmethod
    def get_document(self, id: str) -> Document:
        """The document; NotFound if absent."""

    @abstractmethod
    def find_documents(
        self, kind: str, *, name: str | None = None, owner: str = "", with_blobs: bool = False
    ) -> list[Document]:
        """Documents of a kind (and name), oldest first; blobs only when asked for."""

    @abstractmethod
    def delete_document(self, id: str, *, revision: int) -> None:
        """Remove a document that is still at `revision`."""

    @abstractmethod
    def watch_documents(self, listener: Callable[[], None]) -> None:
        """Call `listener` after every committed write of this store object that adds,
        changes or removes documents (an account's removal too)."""


@dataclass(frozen=True, slots=True)
class DueMessage:
    """A stored message whose embedding (for the model asked about) is missing or stale."""

    chat_id: str
    node_id: str
    content_hash: str
    role: str
    speaker: str
    text: str


@dataclass(frozen=True, slots=True)
class StoredVector:
    """One message's stored embedding: its `seq` (grows with every write), the message, its
    depth in the tree, and the vector as float32 bytes."""

    seq: int
    node_id: str
    depth: int
    vector: bytes


@dataclass(frozen=True, slots=True)
class StoredSigns:
    """One message's stored embedding as its sign bits (packed, bit i set: component i
    is above zero; 64 bytes for 512 floats): its `seq`, the message, its depth."""

    seq: int
    node_id: str
    depth: int
    signs: bytes


@dataclass(frozen=True, slots=True)
class NearMessage:
    """A message found near a query by the store's own search: its depth in the tree and
    its score (the dot product of its stored unit vector with the query: the cosine)."""

    node_id: str
    depth: int
    score: float


class VectorRepository(ABC):
    """Embeddings for recall by meaning: messages' per chat, other texts' by hash."""

    @abstractmethod
    def messages_due(
        self,
        model: str,
        *,
        limit: int,
        owners: Collection[str] | None = None,
        written: tuple[str, int] | None = None,
    ) -> list[DueMessage]:
        """Up to `limit` live messages with no embedding of their current text: of any
        chat, or (`owners`) of the chats these accounts own; `written` (chat id,
        revision): only that chat's messages written after that revision."""

    @abstractmethod
    def fill_signs(self, *, limit: int) -> int:
        """Store the sign bits of up to `limit` vectors stored without them (written
        before the bits were); how many (0: none is left)."""

    @abstractmethod
    def save_message_vectors(self, model: str, rows: Sequence[tuple[DueMessage, bytes]]) -> int:
        """Store each message's vector (replacing an older one); messages gone meanwhile
        are skipped. How many were stored."""

    @abstractmethod
    def message_vectors(
        self, chat_id: str, model: str, *, after: int = 0, limit: int | None = None
    ) -> list[StoredVector]:
        """The chat's vectors written after `seq` number `after`, in `seq` order (the
        first `limit` of them, if given)."""

    @abstractmethod
    def message_signs(
        self, chat_id: str, model: str, *, after: int = 0, limit: int | None = None
    ) -> list[StoredSigns]:
        """As `message_vectors`, each vector's sign bits instead of its floats."""

    @abstractmethod
    def vectors_at(self, seqs: Sequence[int]) -> dict[int, bytes]:
        """The stored vectors of these `seq` numbers (those still stored), by `seq`."""

    @abstractmethod
    def vector_search(self) -> str:
        """The database's own nearest-neighbour search: "sqlite-vec", "pgvector", or ""
        (none: the caller searches the vectors itself)."""

    @abstractmethod
    def nearest_messages(
        self, chat_id: str, model: str, query: bytes, *, below_depth: int, shortlist: int
    ) -> tuple[list[NearMessage], bool] | None:
        """The chat's messages above depth `below_depth` nearest the unit vector `query`
        (float32 bytes), best first, at most `shortlist`, and whether these are all there
        are (False: asking for a longer shortlist may find more). None when the database
        has no search of its own (`vector_search()` is "")."""

    @abstractmethod
    def node_vectors(self, model: str, node_ids: Sequence[str]) -> dict[str, bytes]:
        """The stored vectors of these messages (those embedded), by node id."""

    @abstractmethod
    def climb(self, chat_id: str, start: str, *, limit: int) -> list[tuple[str, int]]:
        """`(id, depth)` of a node and up to `limit - 1` of its ancestors, the node first."""

    @abstractmethod
    def text_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]:
        """The stored vectors of these text hashes (those there are)."""

    @abstractmethod
    def save_text_vectors(self, model: str, vectors: Mapping[str, bytes]) -> None:
        """Store vectors of texts by hash (one already stored stays)."""


@dataclass(frozen=True, slots=True)
class MessageHit:
    """A live message whose text holds every word searched for, with its chat's title and
    active leaf (to tell whether the message is on the chat's path)."""

    chat_id: str
    chat_title: str
    node_id: str
    parent_id: str | None
    role: str
    speaker: str
    depth: int
    hidden: bool
    text: str
    active_leaf_id: str | None


class SearchRepository(ABC):
    """Full-text search over the messages of live chats."""

    @abstractmethod
    def search_messages(
        self,
        terms: Sequence[str],
        *,
        owner: str,
        chat_id: str | None = None,
        limit: int = 50,
    ) -> list[MessageHit]:
        """The newest live messages (of `owner`'s live chats, or of one chat) holding every
        term (folded, see `taverna.model.search_text`) anywhere in their text."""


class Store(
    ChatRepository,
    TurnReads,
    SentPromptRepository,
    DocumentRepository,
    VectorRepository,
    SearchRepository,
):
    """A whole store: chats plus library, opened on one database."""

    url: str

    @abstractmethod
    # ------------------------------------------------------------------ accounts

    @abstractmethod
    def add_account(self, name: str, password_hash: str, *, admin: bool = False) -> Account:
        """A new account; Conflict if the name is taken."""

    @abstractmethod
    def accounts(self) -> list[Account]:
        """Every account, by name."""

    @abstractmethod
    def account(self, *, id: str | None = None, name: str | None = None) -> Account:
        """The account with that id or name; NotFound if none."""

    @abstractmethod
    def update_account(self, id: str, **values: Any) -> Account:
        """Change an account's password hash, admin flag, quotas or disabled flag (a new
        password, or disabling it, ends its sessions)."""

    @abstractmethod
    def delete_account(self, id: str) -> AccountRemoval:
        """Remove an account and everything it owns: its chats go from every read at once
        (their rows are removed in the background), its library documents, pictures and
        connections at once, its sessions and counts too."""

    @abstractmethod
    def add_session(self, token_hash: str, user_id: str, csrf: str, expires: datetime) -> None:
        """Keep a login session under the hash of its token."""

    @abstractmethod
    def session(self, token_hash: str) -> tuple[Account, str, datetime] | None:
        """The account, CSRF token and end of the session with that token hash; None if none."""

    @abstractmethod
    def end_session(self, token_hash: str) -> None:
        """Forget a session (log out)."""

    @abstractmethod
    def count_generation(self, user_id: str, since: datetime, limit: int | None) -> int:
        """How many generations `user_id` started since `since`; records one more unless
        that count reached `limit`."""

    @abstractmethod
    def generations_since(self, user_id: str, since: datetime) -> int:
        """How many generations `user_id` started since `since` (nothing recorded)."""

    @abstractmethod
    def stored_bytes(self, owner: str) -> int:
        """The size of what an account holds: library documents, pictures, drafts, chats
        and their messages."""

    @abstractmethod
    def login_failures(self, subjects: Sequence[str], since: datetime) -> dict[str, list[datetime]]:
        """The times of the failed logins of each subject since `since`, oldest first (rows
        older than `since` go)."""

    @abstractmethod
    def login_failures_from(self, prefix: str, since: datetime) -> dict[str, list[datetime]]:
        """The times of the failed logins since `since` of every subject that starts with
        `prefix` (`address:`), oldest first."""

    @abstractmethod
    def add_login_failure(self, subjects: Sequence[str]) -> None:
        """Record a failed login under each subject, now."""

    @abstractmethod
    def clear_login_failures(self, subject: str) -> None:
        """Forget a subject's failed logins (after it logged in, or an admin unlocked it)."""

    def close(self) -> None:
        """Release the database connections."""

    def reading(self) -> AbstractContextManager[None]:
        """A span of reads only, on one thread: its reads may share one connection and
        transaction (fewer round trips, one consistent view). Nothing inside may write."""
        return nullcontext()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def iter_depth_first(tree: ChatTree) -> Iterator[tuple[Node, int]]:
    """Nodes of a tree depth-first in candidate order with their depth (for display)."""
    kids = tree.children()
    stack = [(node, 0) for node in reversed(kids.get(None, []))]
    while stack:
        node, depth = stack.pop()
        yield node, depth
        for child in reversed(kids.get(node.id, [])):
            stack.append((child, depth + 1))
