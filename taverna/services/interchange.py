"""SillyTavern chats in and out of the conversation tree.

Import: a chat JSONL becomes a tree (swipes become candidates with the chosen one selected,
hidden stays hidden, every other field travels in the node's extras); a chat's checkpoint and
branch files (linked by `chat_metadata.main_chat`) merge into the same tree along their common
prefix and become named checkpoints and branches. Export: the active path as a JSONL that
SillyTavern opens (candidates as `swipes`), and every named branch and checkpoint as its own
JSONL linked by `main_chat`. Importing a plain chat and exporting it gives back the same file.

Which leaves get a file: SillyTavern's branches and checkpoints are things a person named, so
those are files. A leftover no one named (the old turn after an edit-and-resend, a swipe with
its own continuation) is kept too, but not as a file: a file repeats the whole path up to its
fork, so a file per leftover costs the chat's length for each one, and a chat where every
message was resent once would need as many files as messages, quadratic in size. Instead the
leftover subtree is written once, beside the message it is an alternative to, under the
message key `taverna_forks` (its newest line as message objects, its own leftovers nested the
same way). SillyTavern keeps unknown message keys and shows the chat as it was; importing the
file here rebuilds the subtree, so the export stays linear in the number of nodes. Only a
leftover with no message beside it (under a named file's last message), or nested more than
MAX_FORK_NESTING forks deep, gets a `Branch #N` file.
A fork keeps the messages and their candidates, not the per-branch chat state at its end.
Files are made line by line and written as they are made, so memory holds the tree and one
path, never a whole file set.
"""

from __future__ import annotations

import gc
import hashlib
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Set
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePath
from typing import Any

from taverna.errors import FormatError, NotFound
from taverna.formats.st_chat import (
    FORKS,
    ChatDocument,
    ChatHeader,
    ChatMessage,
    JsonObject,
    JsonValue,
    chat_as_text,
    dump_json,
    format_send_date,
    humanized_date,
    iso_date,
    parse_send_date,
    read_chat,
)
from taverna.model.chat import (
    AuthorsNote,
    Branch,
    CharacterRef,
    Chat,
    ChatState,
    ChatTree,
    Checkpoint,
    GenerationInfo,
    Node,
    NodeRole,
    effective_state,
    new_id,
)
from taverna.store.repository import NewChat, Store

# How deep forks nest inside forks before the deeper ones get files of their own: JSON
# readers (SillyTavern's, Python's) stop at some nesting depth, and no chat should near it.
MAX_FORK_NESTING = 32

# Reserved key in node extras, chat metadata and state extras for what SillyTavern's files
# need back on export (key order, swipe records, file names); SillyTavern never writes it.
ST = "_st"

# formats-chat.md §3.1: the metadata keys that follow the path (state on nodes).
STATE_KEYS = ("variables", "timedWorldInfo")
NOTE_KEYS = ("note_prompt", "note_interval", "note_position", "note_depth", "note_role")
# The message keys the node itself holds; the rest are extras.
NODE_KEYS = ("name", "is_user", "is_system", "mes", "swipe_id", "swipes", "swipe_info")
# What SillyTavern restores from `swipe_info` when switching swipes (algo-chat-ops.md §1.2).
SWIPE_INFO_KEYS = ("send_date", "gen_started", "gen_finished", "extra")
DEFAULT_ORDER = ("name", "is_user", "is_system", "send_date", "mes", "extra")
_SYSTEM_TYPES = {
    "comment",
    "help",
    "welcome",
    "group",
    "empty",
    "generic",
    "slash_commands",
    "formatting",
    "hotkeys",
    "macros",
    "welcome_prompt",
    "assistant_note",
}


@contextmanager
def bulk() -> Iterator[None]:
    """Pause the cycle collector while a large chat is built or written.

    A 100,000-message chat is hundreds of thousands of small objects, none of them in
    cycles; full collections over them would cost more than the work itself.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# ---------------------------------------------------------------------------
# Import: documents -> tree


@dataclass(frozen=True)
class LinkedFile:
    """A checkpoint or branch file of a chat, by its name (file stem)."""

    name: str
    document: ChatDocument
    checkpoint: bool
    # 1.12.6 group chats keep their metadata in the group file, not in the chat file.
    metadata: Mapping[str, Any] | None = None


@dataclass
class TreeImport:
    """A whole chat ready for the store's bulk import."""

    new: NewChat
    nodes: list[Node]
    active_leaf_id: str | None
    branches: list[Branch]
    checkpoints: list[Checkpoint]
    message_count: int = 0


def role_of(message: ChatMessage) -> NodeRole:
    """The tree role of a SillyTavern message."""
    if message.is_user:
        return NodeRole.USER
    extra = message.fields.get("extra")
    kind = extra.get("type") if isinstance(extra, dict) else None
    if kind == "narrator":
        return NodeRole.NARRATOR
    if isinstance(kind, str) and kind in _SYSTEM_TYPES:
        return NodeRole.SYSTEM
    return NodeRole.ASSISTANT


def _as_utc(moment: datetime | None) -> datetime | None:
    if moment is None:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _generation(fields: Mapping[str, Any]) -> GenerationInfo | None:
    extra = fields.get("extra")
    extra = extra if isinstance(extra, dict) else {}
    api, model = extra.get("api"), extra.get("model")
    started, finished = fields.get("gen_started"), fields.get("gen_finished")
    if not (api or model or started or finished):
        return None
    return GenerationInfo(
        provider=api if isinstance(api, str) else "",
        model=model if isinstance(model, str) else "",
        started=_as_utc(parse_send_date(started)) if isinstance(started, str) else None,
        finished=_as_utc(parse_send_date(finished)) if isinstance(finished, str) else None,
    )


def state_from_metadata(
    metadata: Mapping[str, Any], *, summary: str | None = None, extras: Mapping[str, Any]
) -> ChatState:
    """The path state a file's `chat_metadata` records (variables, timers, author's note)."""
    note = None
    if any(key in metadata for key in NOTE_KEYS):
        note = AuthorsNote(
            prompt=str(metadata.get("note_prompt", "")),
            interval=_int(metadata.get("note_interval"), 1),
            position=_int(metadata.get("note_position"), 1),
            depth=_int(metadata.get("note_depth"), 4),
            role=_int(metadata.get("note_role"), 0),
        )
    variables = metadata.get("variables")
    timers = metadata.get("timedWorldInfo")
    return ChatState(
        variables=dict(variables) if isinstance(variables, dict) else {},
        timers=dict(timers) if isinstance(timers, dict) else {},
        authors_note=note,
        summary=summary,
        extras=dict(extras),
    )


def _int(value: Any, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return int(value)


def key_shape(value: Any) -> Any:
    """The key order of every object inside a JSON value (None where nothing is to keep).

    Databases that store JSON as binary (PostgreSQL's JSONB) sort object keys; this records
    the order so `apply_shape` can put it back and a file comes back byte for byte.
    """
    if isinstance(value, dict):
        children = {}
        for key, item in value.items():
            if isinstance(item, dict | list):
                shape = key_shape(item)
                if shape is not None:
                    children[key] = shape
        result: dict[str, Any] = {}
        if len(value) > 1:
            result["k"] = list(value)
        if children:
            result["c"] = children
        return result or None
    if isinstance(value, list):
        items = {}
        for index, item in enumerate(value):
            if isinstance(item, dict | list):
                shape = key_shape(item)
                if shape is not None:
                    items[str(index)] = shape
        return {"c": items} if items else None
    return None


def apply_shape(value: Any, shape: Any) -> Any:
    """A JSON value with the key order `key_shape` recorded (keys it did not know go last)."""
    if not isinstance(shape, Mapping):
        return value
    children = shape.get("c") or {}
    if isinstance(value, dict):
        out = {k: value[k] for k in shape.get("k") or () if k in value}
        out.update((k, v) for k, v in value.items() if k not in out)
        for key, child in children.items():
            if key in out:
                out[key] = apply_shape(out[key], child)
        return out
    if isinstance(value, list):
        return [
            apply_shape(item, children[str(i)]) if str(i) in children else item
            for i, item in enumerate(value)
        ]
    return value


class _IdSequence:
    """Time-ordered UUIDv7 ids for a bulk import, made faster than one by one.

    One fresh UUIDv7 gives the timestamp and a random start; the ids after it count up
    in its random low bits, so they sort in creation order and before any id made later.
    """

    def __init__(self) -> None:
        first = int(new_id().replace("-", ""), 16)
        low_mask = (1 << 62) - 1
        self.next = (first & ~low_mask) | ((first & low_mask) >> 2)  # headroom to count up

    def __call__(self) -> str:
        value = self.next
        self.next += 1
        h = f"{value:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class _TreeBuilder:
    """Adds messages of one or more files to an in-memory tree, merging shared prefixes."""

    def __init__(self, chat_id: str, now: datetime, *, shapes: bool = False) -> None:
        self.chat_id = chat_id
        self.now = now
        self.shapes = shapes
        self.new_id = _IdSequence()
        self.nodes: list[Node] = []
        self.kids: dict[str | None, list[Node]] = {}
        self.by_id: dict[str, Node] = {}
        self.position: dict[str, int] = {}
        self.dates: dict[str | int | float, datetime | None] = {}

    def _date(self, value: Any) -> datetime | None:
        """A `send_date` as a moment; neighbouring messages share dates, so parse each once."""
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            return None
        if value not in self.dates:
            self.dates[value] = _as_utc(parse_send_date(value))
        return self.dates[value]

    def _add(self, node: Node) -> Node:
        self.position[node.id] = len(self.nodes)
        self.nodes.append(node)
        self.kids.setdefault(node.parent_id, []).append(node)
        self.by_id[node.id] = node
        return node

    def _node(
        self,
        parent: Node | None,
        message: ChatMessage,
        fields: JsonObject,
        st: dict[str, Any],
        keep: Mapping[str, Any] | None = None,
        role: NodeRole | None = None,
    ) -> Node:
        extras: dict[str, Any] = {k: v for k, v in fields.items() if k not in NODE_KEYS}
        if keep:
            extras.update(keep)
        extras[ST] = st
        created = self._date(fields.get("send_date"))
        return self._add(
            Node(
                id=self.new_id(),
                chat_id=self.chat_id,
                parent_id=parent.id if parent else None,
                role=role or role_of(message),
                content=message.text,
                speaker=message.name,
                hidden=message.hidden,
                created=created or self.now,
                depth=parent.depth + 1 if parent else 0,
                generation=_generation(fields),
                extras=extras,
            )
        )

    def add_message(self, parent: Node | None, message: ChatMessage) -> Node:
        """Add one message (its swipes as candidates); returns the selected candidate."""
        order = list(message.fields)
        shape = key_shape(message.fields) if self.shapes else None
        if not message.swipes_consistent:
            # Swipe fields that do not describe the shown text stay as they are.
            fields = dict(message.fields)
            keep: dict[str, Any] = {
                k: fields[k] for k in ("swipe_id", "swipes", "swipe_info") if k in fields
            }
            plain: dict[str, Any] = {"order": order}
            if shape is not None:
                plain["shape"] = shape
            return self._node(parent, message, fields, plain, keep)
        swipes = message.swipes or ()
        selected_index = message.swipe_id or 0
        role = role_of(message)
        group = self.new_id()
        selected: Node | None = None
        for index, swipe in enumerate(swipes):
            fields = dict(message.fields)
            if index != selected_index and swipe.info is not None:
                for key in SWIPE_INFO_KEYS:
                    if key in swipe.info:
                        fields[key] = swipe.info[key]
            st: dict[str, Any] = {"order": order, "swipes": True, "group": group}
            if shape is not None:
                st["shape"] = shape
            if swipe.info is not None:
                st["swipe_info"] = swipe.info
            candidate = ChatMessage({**fields, "mes": swipe.text})
            # All candidates are of the message's kind, whatever their swipe_info says.
            node = self._node(parent, candidate, fields, st, role=role)
            if index == selected_index:
                selected = node
        assert selected is not None
        return selected

    def set_state(self, node_id: str, state: ChatState) -> None:
        """Record a state on a node already added."""
        old = self.by_id[node_id]
        new = old.with_changes(state=state)
        self.nodes[self.position[node_id]] = new
        siblings = self.kids[old.parent_id]
        siblings[siblings.index(old)] = new
        self.by_id[node_id] = new

    def add_file(
        self, messages: Sequence[ChatMessage], *, merge: bool, parent: Node | None = None
    ) -> Node | None:
        """Add a file's messages under `parent`; with `merge`, reuse matching nodes.

        A message's `taverna_forks` go in first, beside it: they are older than the line the
        file follows, so the tree gets back its creation order (and so its export).
        """
        merging = merge
        for message in messages:
            forks = message.forks
            if FORKS in message.fields:
                message = message.without(FORKS)
            for branch in forks:
                # A fork repeated in a copy of the file (a branch SillyTavern made) merges.
                self.add_file(branch, merge=True, parent=parent)
            match = self._match(parent, message) if merging else None
            if match is None:
                merging = False
                parent = self.add_message(parent, message)
            else:
                parent = match
        return parent

    def _match(self, parent: Node | None, message: ChatMessage) -> Node | None:
        role = role_of(message)
        for node in self.kids.get(parent.id if parent else None, []):
            if node.role is role and node.speaker == message.name and node.content == message.text:
                return node
        return None


def _summary_along(messages: Sequence[ChatMessage]) -> str | None:
    """formats-chat.md §3.1: the newest message carrying `extra.memory` holds the summary."""
    for message in reversed(messages):
        memory = message.extra.get("memory")
        if isinstance(memory, str):
            return memory
    return None


def _non_state(metadata: Mapping[str, Any]) -> JsonObject:
    return {k: v for k, v in metadata.items() if k not in STATE_KEYS and k not in NOTE_KEYS}


def _file_state(
    name: str,
    header: ChatHeader | None,
    metadata: Mapping[str, Any],
    messages: Sequence[ChatMessage],
    *,
    shapes: bool = False,
) -> ChatState:
    """The state a file records at its last message, with what its header needs on export."""
    header_fields: JsonObject | None = None
    if header is not None:
        header_fields = {k: (None if k == "chat_metadata" else v) for k, v in header.fields.items()}
    file_st: dict[str, Any] = {
        "file": name,
        "header": header_fields,
        "metadata": _non_state(metadata),
        "metadata_order": list(metadata),
    }
    if shapes and header is not None:
        file_st["header_shape"] = key_shape({**header.fields, "chat_metadata": dict(metadata)})
    extras = {ST: file_st}
    return state_from_metadata(metadata, summary=_summary_along(messages), extras=extras)


def build_tree(
    main: ChatDocument,
    *,
    name: str,
    linked: Sequence[LinkedFile] = (),
    characters: Sequence[CharacterRef] = (),
    group_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    owner: str = "",
    now: datetime | None = None,
    title: str | None = None,
    keep_key_order: bool = False,
    source: str | None = None,
) -> TreeImport:
    """The tree of a chat file and its checkpoint and branch files, ready for bulk import.

    `metadata` replaces the file's `chat_metadata` (1.12.6 group chats keep theirs in the
    group file). `keep_key_order` records the key order of nested objects too, for stores
    that do not keep it (PostgreSQL's JSONB).
    """
    moment = now or datetime.now(UTC)
    chat_id = new_id()
    builder = _TreeBuilder(chat_id, moment, shapes=keep_key_order)
    main_meta = dict(metadata) if metadata is not None else dict(main.metadata.fields)
    main_state = _file_state(name, main.header, main_meta, main.messages, shapes=keep_key_order)
    main_leaf = builder.add_file(main.messages, merge=False)
    branches: list[Branch] = []
    checkpoints: list[Checkpoint] = []
    for item in linked:
        leaf = builder.add_file(item.document.messages, merge=True)
        if leaf is None:
            continue
        doc = item.document
        builder.set_state(
            leaf.id,
            _file_state(
                item.name,
                doc.header,
                item.metadata if item.metadata is not None else doc.metadata.fields,
                doc.messages,
                shapes=keep_key_order,
            ),
        )
        if item.checkpoint:
            checkpoints.append(Checkpoint(new_id(), chat_id, item.name, leaf.id, moment))
        else:
            branches.append(Branch(new_id(), chat_id, item.name, leaf.id, moment))
    if main_leaf is not None:
        # Recorded on the leaf too, so it does not inherit a checkpoint's state above it.
        builder.set_state(main_leaf.id, main_state)
    if branches:
        head = main_leaf.id if main_leaf else None
        branches.insert(0, Branch(new_id(), chat_id, "main", head, moment))
    header = main.header or ChatHeader()
    if not characters:
        speaker = header.character_name
        if not speaker or speaker == "unused":
            speaker = next((m.name for m in main.messages if not m.is_user and m.name), "")
        characters = (CharacterRef(speaker),) if speaker else ()
    user_name = header.user_name
    if not user_name or user_name == "unused":
        user_name = next((m.name for m in main.messages if m.is_user and m.name), "")
    file_st = main_state.extras[ST]
    chat_meta = {
        **_non_state(main_meta),
        ST: {
            "file": name,
            "header": file_st["header"],
            "metadata_order": file_st["metadata_order"],
            **({"header_shape": file_st["header_shape"]} if "header_shape" in file_st else {}),
            **({"source": source} if source else {}),
        },
    }
    created = parse_send_date(header.create_date) if header.create_date else None
    new = NewChat(
        title=title or name,
        characters=tuple(characters),
        group_id=group_id,
        user_name=user_name,
        base_state=main_state,
        metadata=chat_meta,
        owner=owner,
        id=chat_id,
        created=_as_utc(created) or moment,
    )
    return TreeImport(
        new=new,
        nodes=builder.nodes,
        active_leaf_id=main_leaf.id if main_leaf else None,
        branches=branches,
        checkpoints=checkpoints,
        message_count=len(main.messages),
    )


# ---------------------------------------------------------------------------
# Export: tree -> documents


@dataclass(frozen=True)
class ExportedFile:
    """One SillyTavern chat file of an export: its name (no extension) and its document."""

    name: str
    document: ChatDocument
    main: bool


def _st(node: Node) -> Mapping[str, Any]:
    value = node.extras.get(ST)
    return value if isinstance(value, Mapping) else {}


def _alive_children(kids: Mapping[str | None, list[Node]], node_id: str | None) -> list[Node]:
    return [n for n in kids.get(node_id, []) if not n.deleted]


def _swipe_group(
    node: Node,
    kids: Mapping[str | None, list[Node]],
    on_path: set[str],
    taken: Set[str] = frozenset(),
) -> list[Node]:
    """The candidates shown as `swipes` with `node`: itself and childless siblings of its kind.

    A sibling with its own continuation is a branch (a file or a fork), not a swipe; user
    messages have no swipes (a sibling of a user message is an edit-and-resend branch).
    Siblings in `taken` are shown elsewhere already.
    """
    if node.role is NodeRole.USER:
        return [node]
    group = _st(node).get("group")
    result = []
    for sibling in _alive_children(kids, node.parent_id):
        if sibling.id == node.id:
            result.append(sibling)
            continue
        if sibling.role is not node.role or sibling.id in on_path or sibling.id in taken:
            continue
        if _alive_children(kids, sibling.id):
            continue
        other = _st(sibling).get("group")
        if group is None or other is None or other == group:
            result.append(sibling)
    return result


def _swipe_info_of(node: Node, fields: Mapping[str, Any]) -> JsonObject:
    info = _st(node).get("swipe_info")
    if isinstance(info, dict):
        return dict(info)
    return {k: fields[k] for k in SWIPE_INFO_KEYS if k in fields}


def _chat_st(chat: Chat) -> Mapping[str, Any]:
    value = chat.metadata.get(ST)
    return value if isinstance(value, Mapping) else {}


def _state_st(state: ChatState) -> Mapping[str, Any] | None:
    value = state.extras.get(ST)
    return value if isinstance(value, Mapping) else None


def _base_fields(node: Node) -> JsonObject:
    """A message's own fields before the swipe fields: from its extras, or made for new nodes."""
    st = _st(node)
    fields: JsonObject = {k: v for k, v in node.extras.items() if k != ST}
    fields["name"] = node.speaker
    fields["is_user"] = node.role is NodeRole.USER
    if "is_system" in (st.get("order") or ()) or node.hidden or not st:
        fields["is_system"] = node.hidden
    fields["mes"] = node.content
    if not st:
        moment = node.created or datetime.now(UTC)
        fields.setdefault("send_date", format_send_date(moment))
        old_extra = fields.get("extra")
        extra: JsonObject = dict(old_extra) if isinstance(old_extra, dict) else {}
        if node.role is NodeRole.NARRATOR:
            extra.setdefault("type", "narrator")
        gen = node.generation
        if gen is not None:
            if gen.provider:
                extra.setdefault("api", gen.provider)
            if gen.model:
                extra.setdefault("model", gen.model)
            if gen.started:
                fields.setdefault("gen_started", iso_date(gen.started))
            if gen.finished:
                fields.setdefault("gen_finished", iso_date(gen.finished))
        fields["extra"] = extra
    return fields


def _ordered(fields: JsonObject, order: Iterable[str]) -> JsonObject:
    out: JsonObject = {}
    for key in order:
        if key in fields:
            out[key] = fields[key]
    for key, value in fields.items():
        if key not in out:
            out[key] = value
    return out


def message_for(
    node: Node,
    kids: Mapping[str | None, list[Node]],
    on_path: set[str],
    taken: Set[str] = frozenset(),
    *,
    group: list[Node] | None = None,
) -> ChatMessage:
    """The SillyTavern message line of a node on a path, its candidates as swipes."""
    st = _st(node)
    fields = _base_fields(node)
    if group is None:
        group = _swipe_group(node, kids, on_path, taken)
    new_assistant = not st and node.role is NodeRole.ASSISTANT
    if st.get("swipes") or len(group) > 1 or new_assistant:
        infos: list[JsonObject | None] = []
        for candidate in group:
            record = _st(candidate).get("swipe_info")
            if isinstance(record, dict):
                infos.append(dict(record))
            elif not _st(candidate):
                infos.append(_swipe_info_of(candidate, _base_fields(candidate)))
            else:
                infos.append(None)
        # swipe_info is indexed like swipes: keep it a prefix, filling holes if needed.
        last = max((i for i, info in enumerate(infos) if info is not None), default=-1)
        fields["swipe_id"] = group.index(node)
        fields["swipes"] = [c.content for c in group]
        fields["swipe_info"] = [
            info if info is not None else _swipe_info_of(c, _base_fields(c))
            for c, info in zip(group[: last + 1], infos[: last + 1], strict=True)
        ]
    order = st.get("order") or [
        *DEFAULT_ORDER,
        *(k for k in ("gen_started", "gen_finished") if k in fields),
        "swipe_id",
        "swipes",
        "swipe_info",
    ]
    ordered = _ordered(fields, order)
    if "shape" in st:
        ordered = apply_shape(ordered, st["shape"])
    return ChatMessage(ordered)


def _unlink(message: ChatMessage, name: str) -> ChatMessage:
    """formats-chat.md §7: a copy does not carry the link to itself."""
    extra = message.fields.get("extra")
    if not isinstance(extra, dict):
        return message
    changed = dict(extra)
    if changed.get("bookmark_link") == name:
        del changed["bookmark_link"]
    branches = changed.get("branches")
    if isinstance(branches, list) and name in branches:
        rest = [b for b in branches if b != name]
        if rest:
            changed["branches"] = rest
        else:
            del changed["branches"]
    if changed == extra:
        return message
    return message.with_fields(extra=changed)


def _link(message: ChatMessage, name: str, *, checkpoint: bool) -> ChatMessage:
    """Mark the message a checkpoint or branch was made at, as SillyTavern does."""
    extra = dict(message.extra)
    if checkpoint:
        if extra.get("bookmark_link") == name:
            return message
        extra["bookmark_link"] = name
    else:
        names = extra.get("branches")
        names = list(names) if isinstance(names, list) else []
        if name in names:
            return message
        extra["branches"] = [*names, name]
    return message.with_fields(extra=extra)


def _metadata_for(chat: Chat, state: ChatState, *, main_chat: str | None, own: bool) -> JsonObject:
    """A file's `chat_metadata`: the chat's keys (or the file's own) plus the path state."""
    st = _state_st(state)
    chat_st = _chat_st(chat)
    if own and st is not None and st.get("metadata") is not None:
        rest: JsonObject = dict(st["metadata"])
        order = list(st.get("metadata_order") or [])
    else:
        rest = {k: v for k, v in chat.metadata.items() if k != ST}
        order = list(chat_st.get("metadata_order") or [])
    values: JsonObject = dict(rest)
    if state.authors_note is not None:
        note = state.authors_note
        note_values: dict[str, str | int] = {
            "note_prompt": note.prompt,
            "note_interval": note.interval,
            "note_position": note.position,
            "note_depth": note.depth,
            "note_role": note.role,
        }
        defaults = AuthorsNote()
        for key, value in note_values.items():
            # A file that named only some note keys gets back only those (plus changed ones).
            if key in order or not order or value != getattr(defaults, key.removeprefix("note_")):
                values[key] = value
    if state.timers or "timedWorldInfo" in order:
        values["timedWorldInfo"] = dict(state.timers)
    if state.variables or "variables" in order:
        values["variables"] = dict(state.variables)
    if main_chat is not None:
        values["main_chat"] = main_chat
    return _ordered(values, order)


def _header_for(
    chat: Chat, state: ChatState, metadata: JsonObject, *, own: bool
) -> ChatHeader | None:
    st = _state_st(state)
    source = st if own and st is not None else _chat_st(chat)
    if "header" in source:
        header = source["header"]
        if header is None:
            return None
        fields = dict(header)
    elif chat.group_id:
        # formats-chat.md §6.2: a 1.12.6 group chat has no header line.
        return None
    else:
        fields = {
            "user_name": chat.user_name or "User",
            "character_name": chat.characters[0].name if chat.characters else "",
            "create_date": humanized_date(chat.created or datetime.now(UTC)),
        }
    fields["chat_metadata"] = metadata
    if "header_shape" in source:
        return ChatHeader(apply_shape(fields, source["header_shape"]))
    return ChatHeader(fields)


def safe_file_name(name: str, *, limit: int = 180) -> str:
    """A file name safe on every system for any title (reserved characters replaced)."""
    cleaned = unicodedata.normalize("NFC", name)
    cleaned = re.sub(r'[\x00-\x1f\x7f<>:"/\\|?*]', "_", cleaned).strip().rstrip(". ")
    if (
        not cleaned
        or cleaned.upper() in {"CON", "PRN", "AUX", "NUL"}
        or re.fullmatch(r"(?i)(COM|LPT)\d", cleaned)
    ):
        cleaned = f"_{cleaned}"
    if len(cleaned.encode("utf-8")) > limit:
        cleaned = cleaned.encode("utf-8")[:limit].decode("utf-8", "ignore").rstrip(". ")
    return cleaned


@dataclass(frozen=True)
class _FilePlan:
    """One file of an export: its name, the node it ends at, and what kind it is."""

    name: str
    leaf_id: str | None
    main: bool
    checkpoint: bool


@dataclass
class StreamedFile:
    """One file of an export, its lines made only when read (header first, no line breaks)."""

    name: str
    main: bool
    header: ChatHeader | None
    messages: Iterator[ChatMessage]

    def lines(self) -> Iterator[str]:
        if self.header is not None:
            yield dump_json(self.header.fields)
        for message in self.messages:
            yield dump_json(message.fields)


class _Exporter:
    """Plans a chat's files, then makes each one's lines on demand.

    The tree is read once and shared; a file holds one path (its length, not the tree's)
    while it is written, so memory does not grow with the number of leaves or files.
    """

    def __init__(self, tree: ChatTree) -> None:
        self.chat = tree.chat
        # Tombstones are not exported: a live message under one hangs from the nearest live
        # ancestor, as it reads on the path (and as an import of the files rebuilds it).
        every = {n.id: n for n in tree.nodes}
        self.alive = []
        for node in tree.nodes:
            if node.deleted:
                continue
            parent = every.get(node.parent_id) if node.parent_id else None
            while parent is not None and parent.deleted:
                parent = every.get(parent.parent_id) if parent.parent_id else None
            if parent is None and node.parent_id is not None:
                node = node.with_changes(parent_id=None)
            elif parent is not None and parent.id != node.parent_id:
                node = node.with_changes(parent_id=parent.id)
            self.alive.append(node)
        self.by_id = {n.id: n for n in self.alive}
        self.selections = tree.selections
        self.kids: dict[str | None, list[Node]] = {}
        for node in self.alive:
            self.kids.setdefault(node.parent_id, []).append(node)
        for siblings in self.kids.values():
            siblings.sort(key=lambda n: n.id)
        chat_st = _chat_st(self.chat)
        self.main_name = str(chat_st.get("file") or "") or _default_name(self.chat)
        self.plans = self._plan(tree)
        self._links_and_forks()
        # Nodes shown so far; a fork shows each leftover node once, in the first file that
        # reaches its place.
        self.taken = set(self.covered)

    def path_to(self, node_id: str | None) -> list[Node]:
        path: list[Node] = []
        current = self.by_id.get(node_id) if node_id else None
        while current is not None:
            path.append(current)
            current = self.by_id.get(current.parent_id) if current.parent_id else None
        path.reverse()
        return path

    def next_on_line(self, node: Node) -> Node | None:
        """Where a line goes on from `node`: the child chosen there last, else the newest."""
        children = _alive_children(self.kids, node.id)
        if not children:
            return None
        chosen = self.selections.get(node.id)
        return next((c for c in children if c.id == chosen), children[-1])

    def newest_leaf(self, node: Node) -> Node:
        """The end of the line a subtree continues on from `node`."""
        while (child := self.next_on_line(node)) is not None:
            node = child
        return node

    def _plan(self, tree: ChatTree) -> list[_FilePlan]:
        chat = self.chat
        plans = [_FilePlan(self.main_name, chat.active_leaf_id, True, False)]
        used = self.used = {self.main_name}
        self.overflow: list[Node] = []
        for branch in tree.branches:
            if branch.id == chat.active_branch_id or branch.head_id is None:
                continue
            name = branch.name if branch.name != "main" else f"{self.main_name} (main)"
            plans.append(_FilePlan(_unique(name, used), branch.head_id, False, False))
        for checkpoint in tree.checkpoints:
            plans.append(_FilePlan(_unique(checkpoint.name, used), checkpoint.node_id, False, True))
        # Which file shows each node first, and the nodes every file shows.
        self.first_file: dict[str, int] = {}
        self.covered: set[str] = set()
        for index, plan in enumerate(plans):
            self._cover(index, plan)
        # A leftover with no place beside a shown message (under a file's last message, or
        # a root when no file shows one) gets a file through its newest line; the rest of
        # its subtree then forks off beside that file's messages.
        main_path = self.path_to(chat.active_leaf_id)
        while True:
            orphan = next((n for n in self.alive if self._orphan(n)), None)
            if orphan is None:
                break
            leaf = self.newest_leaf(orphan)
            fork = _fork_index(main_path, self.path_to(leaf.id))
            date = humanized_date(leaf.created or datetime.now(UTC))
            plan = _FilePlan(_unique(f"Branch #{fork} - {date}", used), leaf.id, False, False)
            plans.append(plan)
            self._cover(len(plans) - 1, plan)
        return plans

    def _cover(self, index: int, plan: _FilePlan) -> None:
        path = self.path_to(plan.leaf_id)
        on_path = {n.id for n in path}
        for node in path:
            self.first_file.setdefault(node.id, index)
            self.covered.update(c.id for c in _swipe_group(node, self.kids, on_path))

    def _leftover(self, node: Node) -> bool:
        """A live node no file shows whose parent one does: the top of a leftover subtree."""
        if node.id in self.covered:
            return False
        return node.parent_id is None or node.parent_id in self.covered

    def _orphan(self, node: Node) -> bool:
        if not self._leftover(node):
            return False
        return not any(
            s.id in self.first_file for s in self.kids.get(node.parent_id, []) if s.id != node.id
        )

    def _links_and_forks(self) -> None:
        """Where each file forks off the main one, and where each leftover subtree goes."""
        main_path = self.path_to(self.chat.active_leaf_id)
        self.main_path_ids = [n.id for n in main_path]
        self.links: dict[int, list[tuple[str, bool]]] = {}
        self.fork_at: dict[int, int] = {}
        self.own: dict[int, bool] = {}
        for index, plan in enumerate(self.plans):
            if plan.main:
                continue
            path = self.path_to(plan.leaf_id)
            state = effective_state(path, self.chat.base_state)
            own = _state_file(state) == plan.name
            fork = len(path) - 1 if plan.checkpoint else _fork_index(main_path, path)
            self.fork_at[index], self.own[index] = fork, own
            on_main = 0 <= fork < len(main_path) and main_path[fork].id == path[fork].id
            if path and on_main and not own:
                # A link SillyTavern shows on the main chat; imported files carry theirs.
                self.links.setdefault(fork, []).append((plan.name, plan.checkpoint))
        # Each leftover subtree forks off beside the first shown sibling, in one file only.
        self.forks: dict[str, list[Node]] = {}
        for node in self.alive:
            if not self._leftover(node):
                continue
            siblings = [s for s in self.kids.get(node.parent_id, []) if s.id in self.first_file]
            beside = min(siblings, key=lambda s: self.first_file[s.id])
            self.forks.setdefault(beside.id, []).append(node)

    def files(self) -> Iterator[StreamedFile]:
        for index, plan in enumerate(self.plans):
            yield self._render(index, plan)
        while self.overflow:
            yield self._overflow_file(self.overflow.pop(0))

    def _render(self, index: int, plan: _FilePlan) -> StreamedFile:
        chat = self.chat
        path = self.path_to(plan.leaf_id)
        state = effective_state(path, chat.base_state)
        own = self.own.get(index, False)
        metadata = _metadata_for(
            chat, state, main_chat=None if plan.main else self.main_name, own=own
        )
        header = _header_for(chat, state, metadata, own=own)
        return StreamedFile(plan.name, plan.main, header, self._messages(index, plan, path, header))

    def _messages(
        self, index: int, plan: _FilePlan, path: list[Node], header: ChatHeader | None
    ) -> Iterator[ChatMessage]:
        on_path = {n.id for n in path}
        fork = self.fork_at.get(index, -1)
        for position, node in enumerate(path):
            message = message_for(node, self.kids, on_path)
            if position == 0 and header is None and self.chat.group_id and not _chat_st(self.chat):
                # formats-chat.md §6.2: the first line of a group chat carries `is_group`.
                message = message.with_fields(is_group=True)
            if plan.main:
                for name, checkpoint in self.links.get(position, ()):
                    message = _link(message, name, checkpoint=checkpoint)
            elif position == fork:
                message = _unlink(message, plan.name)
            if self.first_file.get(node.id) == index and node.id in self.forks:
                branches: list[JsonValue] = []
                taken = self.taken
                for root in self.forks[node.id]:
                    if root.id not in taken:
                        branches.append(self._fork(root, taken))
                message = message.with_fields(**{FORKS: branches})
            yield message

    def _fork(self, root: Node, taken: set[str], nesting: int = 1) -> list[JsonValue]:
        """A leftover subtree as message objects: its newest line, its own forks inside."""
        line = [root]
        while (child := self.next_on_line(line[-1])) is not None:
            line.append(child)
        on_path = {n.id for n in line}
        groups = []
        for node in line:
            group = _swipe_group(node, self.kids, on_path, taken)
            taken.update(c.id for c in group)
            groups.append(group)
        taken.update(on_path)
        out: list[JsonValue] = []
        for node, group in zip(line, groups, strict=True):
            message = message_for(node, self.kids, on_path, group=group)
            nested = [
                s
                for s in _alive_children(self.kids, node.parent_id)
                if s.id not in taken and s.id != node.id
            ]
            if nested:
                inner: list[JsonValue] = []
                for other in nested:
                    if other.id in taken:
                        continue
                    if nesting >= MAX_FORK_NESTING:
                        # Deeper than JSON readers nest: a file of its own, after the others.
                        taken.add(other.id)
                        self.overflow.append(other)
                    else:
                        inner.append(self._fork(other, taken, nesting + 1))
                if inner:
                    message = message.with_fields(**{FORKS: inner})
            out.append(message.fields)
        return out

    def _overflow_file(self, root: Node) -> StreamedFile:
        """A fork nested too deep, as a branch file: the path to it, then its subtree."""
        prefix = self.path_to(root.parent_id) if root.parent_id else []
        leaf = self.newest_leaf(root)
        state = effective_state(self.path_to(leaf.id), self.chat.base_state)
        date = humanized_date(leaf.created or datetime.now(UTC))
        name = _unique(f"Branch #{len(prefix)} - {date}", self.used)
        metadata = _metadata_for(self.chat, state, main_chat=self.main_name, own=False)
        header = _header_for(self.chat, state, metadata, own=False)

        def messages() -> Iterator[ChatMessage]:
            on_path = {n.id for n in prefix}
            for node in prefix:
                yield message_for(node, self.kids, on_path)
            for fields in self._fork(root, self.taken):
                assert isinstance(fields, dict)
                yield ChatMessage(fields)

        return StreamedFile(name, False, header, messages())


def export_stream(tree: ChatTree) -> Iterator[StreamedFile]:
    """The SillyTavern files of a chat, each made line by line as it is read (main first)."""
    return _Exporter(tree).files()


def export_tree(tree: ChatTree) -> list[ExportedFile]:
    """The SillyTavern files of a chat: the active path first, then branches and checkpoints."""
    return [
        ExportedFile(item.name, ChatDocument(item.header, tuple(item.messages)), item.main)
        for item in export_stream(tree)
    ]


def _state_file(state: ChatState) -> str | None:
    st = state.extras.get(ST)
    return str(st.get("file")) if isinstance(st, Mapping) and st.get("file") else None


def _fork_index(main_path: Sequence[Node], path: Sequence[Node]) -> int:
    """Index of the last message a path shares with the main path (-1: none)."""
    index = -1
    for a, b in zip(main_path, path, strict=False):
        if a.id != b.id:
            break
        index += 1
    return index


def _covered(
    files: Iterable[tuple[str, list[Node], bool, bool]], kids: Mapping[str | None, list[Node]]
) -> set[str]:
    """Nodes a set of files shows: their paths and the swipes shown with them."""
    covered: set[str] = set()
    for _, path, _, _ in files:
        on_path = {n.id for n in path}
        for node in path:
            covered.update(c.id for c in _swipe_group(node, kids, on_path))
    return covered


def _unique(name: str, used: set[str]) -> str:
    base = safe_file_name(name)
    candidate, n = base, 2
    while candidate in used:
        candidate = f"{base} ({n})"
        n += 1
    used.add(candidate)
    return candidate


def _default_name(chat: Chat) -> str:
    who = chat.characters[0].name if chat.characters else chat.title
    return f"{who} - {humanized_date(chat.created or datetime.now(UTC))}"


# ---------------------------------------------------------------------------
# The service


@dataclass(frozen=True)
class ImportedChat:
    """What an import stored: the chat, and the files merged into it."""

    chat: Chat
    messages: int
    nodes: int
    branches: tuple[str, ...] = ()
    checkpoints: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    skipped: tuple[str, ...] = field(default_factory=tuple)
    already_imported: bool = False


def read_chat_file(path: Path, *, lenient: bool = False) -> tuple[ChatDocument, str]:
    """A chat file read as a document, with the digest of its bytes; empty files refused."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(f"cannot read ({exc.strerror})", file=str(path)) from None
    document = read_chat(data, source=str(path), lenient=lenient, flatten_chub=True)
    if document.header is None and not document.messages and not document.skipped:
        # formats-chat.md §2: SillyTavern leaves empty chat files out as well.
        raise FormatError("the chat file is empty", file=str(path))
    return document, file_digest(data)


def file_digest(data: bytes) -> str:
    """The SHA-256 of a file's bytes, hex."""
    return hashlib.sha256(data).hexdigest()


def fingerprint(digests: Mapping[str, str]) -> str:
    """One digest for a chat and its linked files (name -> file digest), in any order."""
    joined = "\n".join(f"{name}\t{digests[name]}" for name in sorted(digests))
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()


def group_chat_files(
    documents: Mapping[str, ChatDocument],
    metadata: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[tuple[str, list[LinkedFile]]]:
    """Which files are main chats and which are their checkpoints or branches.

    A file whose `main_chat` names another file of the set joins it (formats-chat.md §11);
    the main file's `bookmark_link`/`branches` links tell checkpoints from branches, else the
    `Branch #` name SillyTavern gives branches. `metadata` gives the `chat_metadata` of
    files that do not hold their own (group chats), by name.
    """
    names = set(documents)
    given = metadata or {}
    links: dict[str, str] = {}
    for name, doc in documents.items():
        own = given.get(name)
        main_value = own.get("main_chat") if own is not None else doc.main_chat
        main = main_value if isinstance(main_value, str) else None
        if main is None and name.startswith("Checkpoint #"):
            # formats-chat.md §7: old checkpoints name their main chat before "Checkpoint #".
            main = name.split("Checkpoint #", 1)[0].strip(" -") or None
        if main and main in names and main != name:
            links[name] = main

    def root(name: str) -> str:
        seen = set()
        while name in links and name not in seen:
            seen.add(name)
            name = links[name]
        return name

    groups: dict[str, list[LinkedFile]] = {}
    for name in documents:
        if name not in links:
            groups.setdefault(name, [])
    for name in sorted(links, key=lambda n: len(documents[n].messages)):
        main = root(name)
        groups.setdefault(main, [])
        bookmarks = {str(m.extra.get("bookmark_link")) for m in documents[main].messages}
        branch_names: set[str] = set()
        for message in documents[main].messages:
            listed = message.extra.get("branches")
            if isinstance(listed, list):
                branch_names.update(str(b) for b in listed)
        if name in bookmarks:
            checkpoint = True
        elif name in branch_names:
            checkpoint = False
        else:
            checkpoint = not name.startswith("Branch #")
        groups[main].append(LinkedFile(name, documents[name], checkpoint, given.get(name)))
    return list(groups.items())


def linked_files_beside(path: Path) -> list[Path]:
    """Chat files in the same folder whose `main_chat` (transitively) is this chat."""
    stem = path.stem
    found: list[Path] = []
    wanted = {stem}
    candidates = sorted(p for p in path.parent.glob("*.jsonl") if p != path)
    mains: dict[Path, str | None] = {}
    for candidate in candidates:
        mains[candidate] = _main_chat_of(candidate)
    changed = True
    while changed:
        changed = False
        for candidate, main in mains.items():
            if candidate not in found and main in wanted:
                found.append(candidate)
                wanted.add(candidate.stem)
                changed = True
    return found


def _main_chat_of(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            first = handle.readline(1 << 20)
    except OSError:
        return None
    try:
        doc = read_chat(first, source=str(path))
    except FormatError:
        return None
    main = doc.main_chat
    if main is None and path.stem.startswith("Checkpoint #") and doc.header is not None:
        return path.stem.split("Checkpoint #", 1)[0].strip(" -") or None
    return main


class InterchangeService:
    """Imports SillyTavern chat files into the store and exports chats back out."""

    def __init__(self, store: Store, *, clock: Callable[[], datetime] | None = None) -> None:
        self.store = store
        self.clock = clock or (lambda: datetime.now(UTC))
        # owner -> source fingerprint -> chat id, read from the store once per service
        self._sources: dict[str, dict[str, str]] = {}

    def import_documents(
        self,
        main: ChatDocument,
        *,
        name: str,
        linked: Sequence[LinkedFile] = (),
        characters: Sequence[CharacterRef] = (),
        group_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        owner: str = "",
        title: str | None = None,
        source: str | None = None,
        again: bool = False,
    ) -> ImportedChat:
        """Store a chat document (and its checkpoint and branch files) as one tree.

        `name` is the file name the chat came from (and goes back to on export); `title`
        what a person sees (default: the name). `source` fingerprints the files: importing
        the same files again returns the chat made the first time (`already_imported`)
        unless `again` is set.
        """
        if source is not None and not again:
            existing = self.find_source(source, owner=owner)
            if existing is not None:
                return ImportedChat(
                    chat=existing,
                    messages=len(main.messages),
                    nodes=0,
                    files=(name, *(item.name for item in linked)),
                    already_imported=True,
                )
        with bulk():
            return self._import_documents(
                main,
                name=name,
                title=title,
                linked=linked,
                characters=characters,
                group_id=group_id,
                metadata=metadata,
                owner=owner,
                source=source,
            )

    def _import_documents(
        self,
        main: ChatDocument,
        *,
        name: str,
        linked: Sequence[LinkedFile],
        characters: Sequence[CharacterRef],
        group_id: str | None,
        metadata: Mapping[str, Any] | None,
        owner: str,
        title: str | None,
        source: str | None = None,
    ) -> ImportedChat:
        built = build_tree(
            main,
            name=name,
            title=title,
            keep_key_order=not self.store.url.startswith("sqlite"),
            source=source,
            linked=linked,
            characters=characters,
            group_id=group_id,
            metadata=metadata,
            owner=owner,
            now=self.clock(),
        )
        chat = self.store.import_tree(
            built.new,
            built.nodes,
            active_leaf_id=built.active_leaf_id,
            branches=built.branches,
            checkpoints=built.checkpoints,
        )
        if source is not None and owner in self._sources:
            self._sources[owner][source] = chat.id
        return ImportedChat(
            chat=chat,
            messages=built.message_count,
            nodes=len(built.nodes),
            branches=tuple(b.name for b in built.branches if b.name != "main"),
            checkpoints=tuple(c.name for c in built.checkpoints),
            files=(name, *(item.name for item in linked)),
            skipped=tuple(
                f"{name}: line {s.line}: {s.reason}"
                for doc_name, doc in ((name, main), *((i.name, i.document) for i in linked))
                for s in doc.skipped
                if doc_name
            ),
        )

    def import_files(
        self,
        paths: Sequence[Path],
        *,
        find_linked: bool = True,
        characters: Sequence[CharacterRef] = (),
        lenient: bool = False,
        owner: str = "",
        again: bool = False,
    ) -> list[ImportedChat]:
        """Import chat files; checkpoint and branch files merge into their main chat.

        With `find_linked`, the checkpoints and branches of a main chat lying in the same
        folder come along even when not named. Files imported before give back the chat
        they made then, unless `again` is set.
        """
        documents: dict[str, ChatDocument] = {}
        digests: dict[str, str] = {}
        seen: set[Path] = set()
        queue = list(paths)
        if find_linked:
            for path in paths:
                queue.extend(linked_files_beside(path))
        for path in queue:
            resolved = path.resolve()
            if resolved in seen:
                continue
            seen.add(resolved)
            with bulk():
                documents[path.stem], digests[path.stem] = read_chat_file(path, lenient=lenient)
        results = []
        for main_name, linked in group_chat_files(documents):
            names = [main_name, *(item.name for item in linked)]
            results.append(
                self.import_documents(
                    documents[main_name],
                    name=main_name,
                    linked=linked,
                    characters=characters,
                    owner=owner,
                    source=fingerprint({n: digests[n] for n in names}),
                    again=again,
                )
            )
        return results

    def import_data(
        self,
        data: bytes,
        file_name: str,
        *,
        characters: Sequence[CharacterRef] = (),
        owner: str = "",
        again: bool = False,
    ) -> ImportedChat:
        """Import one uploaded chat file (its branch files cannot come along this way)."""
        name = PurePath(file_name).stem or "Imported chat"
        with bulk():
            document = read_chat(data, source=file_name, flatten_chub=True)
        if document.header is None and not document.messages:
            raise FormatError("the chat file is empty", file=file_name)
        return self.import_documents(
            document,
            name=name,
            characters=characters,
            owner=owner,
            source=fingerprint({name: file_digest(data)}),
            again=again,
        )

    def find_source(self, source: str, *, owner: str = "") -> Chat | None:
        """The chat imported earlier from exactly these files, if any."""
        known = self._sources.get(owner)
        if known is None:
            known = {}
            for listing in self.store.list_chats(owner=owner):
                fingerprint = _chat_st(listing.chat).get("source")
                if isinstance(fingerprint, str):
                    known[fingerprint] = listing.chat.id
            self._sources[owner] = known
        chat_id = known.get(source)
        if chat_id is None:
            return None
        try:
            return self.store.get_chat(chat_id)
        except NotFound:
            del known[source]  # deleted since
            return None

    def export_files(self, chat_id: str) -> list[ExportedFile]:
        """The SillyTavern files of a chat (main file first)."""
        with bulk():
            return export_tree(self.store.tree(chat_id))

    def export_jsonl(self, chat_id: str) -> str:
        """The active path as one SillyTavern JSONL text (the other files are not made)."""
        with bulk():
            main = next(export_stream(self.store.tree(chat_id)))
            return "\n".join(main.lines())

    def export_text_to(self, chat_id: str, folder: Path) -> Path:
        """Write the active path as SillyTavern's plain-text export; returns its path."""
        with bulk():
            item = next(export_stream(self.store.tree(chat_id)))
            main = ExportedFile(item.name, ChatDocument(item.header, tuple(item.messages)), True)
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{main.name}.txt"
        target.write_text(chat_as_text(main.document), encoding="utf-8")
        return target

    def export_to(self, chat_id: str, folder: Path) -> list[Path]:
        """Write a chat's SillyTavern files into `folder`; returns their paths."""
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise NotFound(f"cannot create the folder ({exc.strerror})", file=str(folder)) from None
        written = []
        with bulk():
            tree = self.store.tree(chat_id)
            for item in export_stream(tree):
                target = folder / f"{item.name}.jsonl"
                tmp = target.with_suffix(".jsonl.tmp")
                # Line by line: a file never sits whole in memory.
                with tmp.open("w", encoding="utf-8", newline="") as out:
                    for number, line in enumerate(item.lines()):
                        if number:
                            out.write("\n")
                        out.write(line)
                tmp.replace(target)
                written.append(target)
        return written


def content_hash(text: str) -> str:
    """A short stable hash of a text (for file names)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
