"""The lines of a SillyTavern chat file made from the tree: messages, metadata and header.

A node on a path becomes one message line (its candidates as `swipes`), the path's state
becomes the header's `chat_metadata`; both come back in the key order the file had.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from datetime import UTC, datetime
from typing import Any

from taverna.formats.st_chat import (
    ChatHeader,
    JsonObject,
    MessageLine,
    format_send_date,
    humanized_date,
    iso_date,
)
from taverna.model.chat import AuthorsNote, Chat, ChatState, Node, NodeRole
from taverna.services.interchange.st_record import (
    SELECTED_SWIPE_OF,
    ST,
    SWIPE_INFO_KEYS,
    apply_shape,
    chat_record,
    node_record,
    state_record,
)

DEFAULT_ORDER = ("name", "is_user", "is_system", "send_date", "mes", "extra")


def alive_children(kids: Mapping[str | None, list[Node]], node_id: str | None) -> list[Node]:
    """A node's children that are not tombstones, in creation order."""
    return [n for n in kids.get(node_id, []) if not n.deleted]


def swipe_group(
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
    group = node_record(node).get("group")
    result = []
    for sibling in alive_children(kids, node.parent_id):
        if sibling.id == node.id:
            result.append(sibling)
            continue
        if sibling.role is not node.role or sibling.id in on_path or sibling.id in taken:
            continue
        if alive_children(kids, sibling.id):
            continue
        other = node_record(sibling).get("group")
        if group is None or other is None or other == group:
            result.append(sibling)
    return result


def swipe_text(node: Node) -> str:
    """A candidate's text in `swipes`: a greeting's raw text while it shows as imported."""
    st = node_record(node)
    raw = st.get("raw")
    if isinstance(raw, str) and st.get("shown") == node.content:
        return raw
    return node.content


def _swipe_info_of(node: Node, fields: Mapping[str, Any]) -> JsonObject:
    info = node_record(node).get("swipe_info")
    if isinstance(info, dict):
        return dict(info)
    return {k: fields[k] for k in SWIPE_INFO_KEYS if k in fields}


def _base_fields(node: Node) -> JsonObject:
    """A message's own fields before the swipe fields: from its extras, or made for new nodes."""
    st = node_record(node)
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
    return _with_summary(node, fields)


def _with_summary(node: Node, fields: JsonObject) -> JsonObject:
    """The message's `extra.memory` as the node's state says (formats-chat.md §3.1).

    The node carries a summary when its own recorded state says it was made there; an
    imported `memory` the node no longer carries (the summary was removed or replaced)
    is left out. The key keeps its place, so an unchanged file comes back byte for byte.
    """
    state = node.state
    carried = state.summary if state is not None and state.summary_at == node.id else None
    extra = fields.get("extra")
    if carried:
        if not isinstance(extra, dict):
            extra = {}
        if extra.get("memory") != carried:
            fields["extra"] = {**extra, "memory": carried}
    elif isinstance(extra, dict) and isinstance(extra.get("memory"), str) and extra["memory"]:
        fields["extra"] = {k: v for k, v in extra.items() if k != "memory"}
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


def _without_own_selected_swipe(node: Node, group: list[Node]) -> list[Node]:
    """`group` as the line shows it: a line imported showing another text than its
    selected swipe goes back out as it came while its candidates are only those two."""
    if len(group) != 2 or "swipes" not in node.extras:
        return group
    others = [c for c in group if c.id != node.id]
    if node_record(others[0]).get(SELECTED_SWIPE_OF) == node.id:
        return [node]
    return group


def message_for(
    node: Node,
    kids: Mapping[str | None, list[Node]],
    on_path: set[str],
    taken: Set[str] = frozenset(),
    *,
    group: list[Node] | None = None,
) -> MessageLine:
    """The SillyTavern message line of a node on a path, its candidates as swipes."""
    st = node_record(node)
    fields = _base_fields(node)
    if group is None:
        group = swipe_group(node, kids, on_path, taken)
    group = _without_own_selected_swipe(node, group)
    new_assistant = not st and node.role is NodeRole.ASSISTANT
    if st.get("swipes") or len(group) > 1 or new_assistant:
        infos: list[JsonObject | None] = []
        for candidate in group:
            record = node_record(candidate).get("swipe_info")
            if isinstance(record, dict):
                infos.append(dict(record))
            elif not node_record(candidate):
                infos.append(_swipe_info_of(candidate, _base_fields(candidate)))
            else:
                infos.append(None)
        # swipe_info is indexed like swipes: keep it a prefix, filling holes if needed.
        last = max((i for i, info in enumerate(infos) if info is not None), default=-1)
        fields["swipe_id"] = group.index(node)
        fields["swipes"] = [swipe_text(c) for c in group]
        fields["swipe_info"] = [
            info if info is not None else _swipe_info_of(c, _base_fields(c))
            for c, info in zip(group[: last + 1], infos[: last + 1], strict=True)
        ]
        if not fields["swipe_info"] and st.get("swipe_info_null"):
            fields["swipe_info"] = None
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
    return MessageLine(ordered)


def without_link(message: MessageLine, name: str) -> MessageLine:
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


def with_link(message: MessageLine, name: str, *, checkpoint: bool) -> MessageLine:
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


def metadata_for(chat: Chat, state: ChatState, *, main_chat: str | None, own: bool) -> JsonObject:
    """A file's `chat_metadata`: the chat's keys (or the file's own) plus the path state."""
    st = state_record(state)
    chat_st = chat_record(chat)
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


def header_for(
    chat: Chat, state: ChatState, metadata: JsonObject, *, own: bool
) -> ChatHeader | None:
    """A file's header line with `metadata`: the one the file had, else one made (or none)."""
    st = state_record(state)
    source = st if own and st is not None else chat_record(chat)
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
            "chat_metadata": None,
        }
    if "chat_metadata" in fields or metadata:
        # A header that had no metadata (TavernAI's) gets none unless there is some now.
        fields["chat_metadata"] = metadata
    if "header_shape" in source:
        return ChatHeader(apply_shape(fields, source["header_shape"]))
    return ChatHeader(fields)
