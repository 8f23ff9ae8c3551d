"""SillyTavern chat documents made into a conversation tree, ready for the store's bulk import.

A chat JSONL becomes a tree (swipes become candidates with the chosen one selected, hidden
stays hidden, every other field travels in the node's extras); a chat's checkpoint and branch
files (linked by `chat_metadata.main_chat`) merge into the same tree along their common prefix
and become named checkpoints and branches. A message's `taverna_forks` become the leftover
subtree they were exported from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from taverna.formats.st_chat import (
    FORKS,
    ChatDocument,
    ChatHeader,
    JsonObject,
    MessageLine,
    parse_send_date,
    shown_differs,
)
from taverna.model.chat import (
    AuthorsNote,
    Branch,
    CharacterRef,
    ChatState,
    Checkpoint,
    GenerationInfo,
    Node,
    NodeRole,
    new_id,
)
from taverna.services.interchange.st_record import (
    SELECTED_SWIPE_OF,
    ST,
    SWIPE_INFO_KEYS,
    key_shape,
    layout_record,
)
from taverna.store.repository import NewChat

# formats-chat.md §3.1: the metadata keys that follow the path (state on nodes).
STATE_KEYS = ("variables", "timedWorldInfo")
NOTE_KEYS = ("note_prompt", "note_interval", "note_position", "note_depth", "note_role")
# The message keys the node itself holds; the rest are extras.
NODE_KEYS = ("name", "is_user", "is_system", "mes", "swipe_id", "swipes", "swipe_info")
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


def role_of(message: MessageLine) -> NodeRole:
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

    def __init__(
        self, chat_id: str, now: datetime, *, shapes: bool = False, user_name: str = ""
    ) -> None:
        self.chat_id = chat_id
        self.user_name = user_name
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
        message: MessageLine,
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

    def add_message(
        self, parent: Node | None, message: MessageLine, *, greeting: bool = False
    ) -> Node:
        """Add one message (its swipes as candidates); returns the selected candidate.

        A `greeting` (a chat's first message) may show its text with macros substituted
        while its swipes keep the raw text (formats-chat.md §4.3): each swipe is still a
        candidate, the shown one with the text shown, the others substituted as they would
        be shown; the raw texts go back to `swipes` on export.
        """
        order = list(message.fields)
        shape = key_shape(message.fields) if self.shapes else None
        substituted = greeting and not message.is_user and not message.swipes_consistent
        if not message.swipes_consistent and not (substituted and message.swipes_well_formed):
            # Swipe fields that do not describe the shown text stay as they are.
            fields = dict(message.fields)
            keep: dict[str, Any] = {
                k: fields[k] for k in ("swipe_id", "swipes", "swipe_info") if k in fields
            }
            plain: dict[str, Any] = {"order": order}
            if shape is not None:
                plain["shape"] = shape
            node = self._node(parent, message, fields, plain, keep)
            if not message.is_user and shown_differs(message.fields):
                self._add_selected_swipe(parent, message, node, order)
            return node
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
            if "swipe_info" in message.fields and message.fields["swipe_info"] is None:
                st["swipe_info_null"] = True
            text = swipe.text or ""
            if substituted:
                shown = message.text if index == selected_index else self.substitute(text, message)
                if shown != text:
                    st["raw"], st["shown"] = text, shown
                text = shown
            candidate = MessageLine({**fields, "mes": text})
            # All candidates are of the message's kind, whatever their swipe_info says.
            node = self._node(parent, candidate, fields, st, role=role)
            if index == selected_index:
                selected = node
        assert selected is not None
        return selected

    def _add_selected_swipe(
        self, parent: Node | None, message: MessageLine, shown: Node, order: list[str]
    ) -> None:
        """The selected swipe of a message showing another text, as a candidate beside the
        shown one: both texts are kept. The line goes back out as it came (the shown
        node's kept swipe fields) while the candidate is left as it was imported."""
        fields = dict(message.fields)
        swipes, index = fields["swipes"], fields["swipe_id"]
        assert isinstance(swipes, list) and isinstance(index, int)  # as `shown_differs` found
        text = swipes[index]
        st: dict[str, Any] = {"order": order, SELECTED_SWIPE_OF: shown.id}
        self._node(parent, MessageLine({**fields, "mes": text}), fields, st)

    def substitute(self, text: str, message: MessageLine) -> str:
        """A greeting's text with its macros filled in, as SillyTavern shows it."""
        if "{{" not in text and "<" not in text:
            return text
        from taverna.engine.macros import MacroContext, evaluate

        return evaluate(text, MacroContext(user=self.user_name or "User", char=message.name)).text

    def set_state(self, node_id: str, state: ChatState) -> None:
        """Record a state on a node already added."""
        old = self.by_id[node_id]
        new = old.with_changes(state=state)
        self.nodes[self.position[node_id]] = new
        siblings = self.kids[old.parent_id]
        siblings[siblings.index(old)] = new
        self.by_id[node_id] = new

    def add_file(
        self, messages: Sequence[MessageLine], *, merge: bool, parent: Node | None = None
    ) -> Node | None:
        """Add a file's messages under `parent`; with `merge`, reuse matching nodes.

        A message's `taverna_forks` go in first, beside it: they are older than the line the
        file follows, so the tree gets back its creation order (and so its export).
        """
        merging = merge
        for position, message in enumerate(messages):
            forks = message.forks
            if FORKS in message.fields:
                message = message.without(FORKS)
            for branch in forks:
                # A fork repeated in a copy of the file (a branch SillyTavern made) merges.
                self.add_file(branch, merge=True, parent=parent)
            match = self._match(parent, message) if merging else None
            if match is None:
                merging = False
                greeting = position == 0 and parent is None
                parent = self.add_message(parent, message, greeting=greeting)
            else:
                parent = match
        return parent

    def _match(self, parent: Node | None, message: MessageLine) -> Node | None:
        role = role_of(message)
        for node in self.kids.get(parent.id if parent else None, []):
            if node.role is role and node.speaker == message.name and node.content == message.text:
                return node
        return None


def _summary_along(messages: Sequence[MessageLine]) -> str | None:
    """formats-chat.md §3.1: the newest message carrying `extra.memory` holds the summary."""
    for message in reversed(messages):
        memory = carried_summary(message.extra)
        if memory is not None:
            return memory
    return None


def carried_summary(extra: Any) -> str | None:
    """The summary a message's `extra` carries (`memory`), None for none.

    memory/index.js reads `extra.memory` by truthiness: an empty one carries nothing.
    """
    if not isinstance(extra, Mapping):
        return None
    memory = extra.get("memory")
    return memory if isinstance(memory, str) and memory else None


def _record_summaries(builder: _TreeBuilder, base: ChatState) -> dict[str, str]:
    """Record each imported summary as state on the node that carries it.

    Editing, deleting or switching away from that message, or branching above it, then
    leaves the summary behind with no code of its own (the state follows the path).
    Returns the carriers: node id -> summary.
    """
    carriers: dict[str, str] = {}
    for node in list(builder.nodes):
        memory = carried_summary(node.extras.get("extra"))
        if memory is None:
            continue
        carriers[node.id] = memory
        if node.state is None:
            builder.set_state(node.id, replace(base, summary=memory, summary_at=node.id))
    return carriers


def _with_summary_of_path(
    builder: _TreeBuilder, leaf_id: str, state: ChatState, carriers: Mapping[str, str]
) -> ChatState:
    """A leaf's file state with the summary of the newest carrier on its path."""
    node: Node | None = builder.by_id.get(leaf_id)
    while node is not None:
        if node.id in carriers:
            return replace(state, summary=carriers[node.id], summary_at=node.id)
        node = builder.by_id.get(node.parent_id) if node.parent_id else None
    return replace(state, summary=None, summary_at=None)


def _non_state(metadata: Mapping[str, Any]) -> JsonObject:
    return {k: v for k, v in metadata.items() if k not in STATE_KEYS and k not in NOTE_KEYS}


def _file_state(
    name: str,
    document: ChatDocument,
    metadata: Mapping[str, Any],
    *,
    shapes: bool = False,
) -> ChatState:
    """The state a file records at its last message, with what its header needs on export."""
    header, messages = document.header, document.messages
    header_fields: JsonObject | None = None
    if header is not None:
        header_fields = {k: (None if k == "chat_metadata" else v) for k, v in header.fields.items()}
    file_st: dict[str, Any] = {
        "file": name,
        "header": header_fields,
        "metadata": _non_state(metadata),
        "metadata_order": list(metadata),
    }
    layout = layout_record(document.layout)
    if layout is not None:
        file_st["layout"] = layout
    if shapes and header is not None:
        file_st["header_shape"] = key_shape({**header.fields, "chat_metadata": dict(metadata)})
    extras = {ST: file_st}
    return state_from_metadata(metadata, summary=_summary_along(messages), extras=extras)


def _user_name(header: ChatHeader | None, messages: Sequence[MessageLine]) -> str:
    """The person's name in a chat: its header's, else its first user message's."""
    name = header.user_name if header is not None else None
    if not name or name == "unused":
        name = next((m.name for m in messages if m.is_user and m.name), "")
    return name


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
    builder = _TreeBuilder(
        chat_id, moment, shapes=keep_key_order, user_name=_user_name(main.header, main.messages)
    )
    main_meta = dict(metadata) if metadata is not None else dict(main.metadata.fields)
    main_state = _file_state(name, main, main_meta, shapes=keep_key_order)
    main_leaf = builder.add_file(main.messages, merge=False)
    branches: list[Branch] = []
    checkpoints: list[Checkpoint] = []
    leaves: list[tuple[Node, LinkedFile]] = []
    for item in linked:
        leaf = builder.add_file(item.document.messages, merge=True)
        if leaf is not None:
            leaves.append((leaf, item))
    # The summaries go on the nodes that carry them; nothing above the first one has any.
    main_state = replace(main_state, summary=None, summary_at=None)
    carriers = _record_summaries(builder, main_state)
    for leaf, item in leaves:
        doc = item.document
        state = _file_state(
            item.name,
            doc,
            item.metadata if item.metadata is not None else doc.metadata.fields,
            shapes=keep_key_order,
        )
        builder.set_state(leaf.id, _with_summary_of_path(builder, leaf.id, state, carriers))
        if item.checkpoint:
            checkpoints.append(Checkpoint(new_id(), chat_id, item.name, leaf.id, moment))
        else:
            branches.append(Branch(new_id(), chat_id, item.name, leaf.id, moment))
    if main_leaf is not None:
        # Recorded on the leaf too, so it does not inherit a checkpoint's state above it.
        builder.set_state(
            main_leaf.id, _with_summary_of_path(builder, main_leaf.id, main_state, carriers)
        )
    if branches:
        head = main_leaf.id if main_leaf else None
        branches.insert(0, Branch(new_id(), chat_id, "main", head, moment))
    header = main.header or ChatHeader()
    if not characters:
        speaker = header.character_name
        if not speaker or speaker == "unused":
            speaker = next((m.name for m in main.messages if not m.is_user and m.name), "")
        characters = (CharacterRef(speaker),) if speaker else ()
    user_name = _user_name(main.header, main.messages)
    file_st = main_state.extras[ST]
    chat_meta = {
        **_non_state(main_meta),
        ST: {
            "file": name,
            "header": file_st["header"],
            "metadata_order": file_st["metadata_order"],
            **({"header_shape": file_st["header_shape"]} if "header_shape" in file_st else {}),
            **({"layout": file_st["layout"]} if "layout" in file_st else {}),
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
