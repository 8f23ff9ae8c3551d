"""Row mapping: database rows as the model's chats, messages, revisions and documents."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from taverna.model.chat import (
    CharacterRef,
    Chat,
    ChatState,
    GenerationInfo,
    Node,
    NodeRole,
    Revision,
    RevisionKind,
)
from taverna.store import schema as t
from taverna.store.repository import Document


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _aware(value: datetime | None) -> datetime | None:
    # SQLite hands timestamps back without a zone; they were written in UTC.
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


def _utc(value: datetime) -> datetime:
    """Timestamps are stored in UTC (SQLite keeps no zone, so it must be one zone)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def _chars_json(chars: Sequence[CharacterRef]) -> list[dict[str, Any]]:
    return [{"name": c.name, "document_id": c.document_id} for c in chars]


def _chat_from_row(row: Mapping[Any, Any]) -> Chat:
    return Chat(
        id=row["id"],
        title=row["title"],
        characters=tuple(
            CharacterRef(c.get("name", ""), c.get("document_id")) for c in row["characters"] or []
        ),
        group_id=row["group_id"],
        user_name=row["user_name"],
        active_leaf_id=row["active_leaf_id"],
        active_branch_id=row["active_branch_id"],
        base_state=ChatState.from_json(row["base_state"] or {}),
        metadata=dict(row["metadata"] or {}),
        created=_aware(row["created"]),
        updated=_aware(row["updated"]),
        revision=row["revision"],
        owner=row["owner"],
    )


def _node_from_row(row: Mapping[Any, Any], text: str) -> Node:
    gen = row["generation"]
    state = row["state"]
    return Node(
        id=row["id"],
        chat_id=row["chat_id"],
        parent_id=row["parent_id"] or None,
        role=NodeRole(row["role"]),
        content=text,
        speaker=row["speaker"],
        hidden=bool(row["hidden"]),
        deleted=bool(row["deleted"]),
        created=_aware(row["created"]),
        depth=row["depth"],
        generation=GenerationInfo.from_json(gen) if gen is not None else None,
        extras=dict(row["extras"] or {}),
        state=ChatState.from_json(state) if state is not None else None,
        revision=row["revision"],
    )


def _to_json_value(column: str, value: Any) -> Any:
    """A column value as JSON, for the change log."""
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _from_json_value(column: str, value: Any) -> Any:
    if column in {"created", "updated"} and isinstance(value, str):
        return datetime.fromisoformat(value)
    return value


def _row_json(row: Mapping[Any, Any]) -> dict[str, Any]:
    return {k: _to_json_value(k, v) for k, v in row.items()}


def _row_from_json(data: Mapping[Any, Any]) -> dict[str, Any]:
    return {k: _from_json_value(k, v) for k, v in data.items()}


# Column order of raw path rows (read without SQLAlchemy's per-value processing:
# a 100,000-message path spends most of its time there otherwise).
_RAW_NODE = (
    "id",
    "chat_id",
    "parent_id",
    "role",
    "speaker",
    "hidden",
    "deleted",
    "created",
    "depth",
    "generation",
    "extras",
    "state",
    "revision",
)
_RAW_NODE_SQL = ", ".join(f"n.{name}" for name in _RAW_NODE)
_ROLES = {role.value: role for role in NodeRole}


def _raw_json(value: Any) -> Any:
    """A JSON column as the driver gave it: text from SQLite, objects from PostgreSQL."""
    if value.__class__ is not str:
        return value
    return {} if value == "{}" else json.loads(value)


# The extras of every node read without any (most nodes made here): nothing writes a
# node's extras in place, a change stores a new mapping, so one empty mapping serves all.
_NO_EXTRAS: dict[str, Any] = {}
# Strings that repeat from node to node (JSON keys, speaker names, model names): a path
# end kept between turns holds one object of each, not one a node. Bounded: emptied when
# full, as one a chat of distinct values would otherwise fill.
_SHARED_MAX = 4096
_SHARED_LONGEST = 64
_shared: dict[str, str] = {}


def _shared_text(text: str) -> str:
    """`text` as the one object kept for its value (a long text as it is)."""
    if len(text) > _SHARED_LONGEST:
        return text
    found = _shared.get(text)
    if found is None:
        if len(_shared) >= _SHARED_MAX:
            _shared.clear()
        found = _shared.setdefault(text, text)
    return found


def _shared_json(value: Any) -> Any:
    """A JSON value whose keys and short strings are the shared objects (see _shared_text)."""
    if value.__class__ is str:
        return _shared_text(value)
    if value.__class__ is dict:
        return {_shared_text(k): _shared_json(v) for k, v in value.items()}
    if value.__class__ is list:
        return [_shared_json(v) for v in value]
    return value


def _raw_time(value: Any) -> datetime | None:
    if value.__class__ is str:
        return datetime.fromisoformat(value).replace(tzinfo=UTC)
    return _aware(value)


def _node_from_raw(row: Sequence[Any], text: str) -> Node:
    (node_id, chat_id, parent, role, speaker, hidden, deleted, created, depth) = row[:9]
    gen, extras, state, revision = (
        _raw_json(row[9]),
        _raw_json(row[10]),
        _raw_json(row[11]),
        row[12],
    )
    return Node(
        id=node_id,
        chat_id=chat_id,
        parent_id=parent or None,
        role=_ROLES[role],
        content=text,
        speaker=speaker,
        hidden=bool(hidden),
        deleted=bool(deleted),
        created=_raw_time(created),
        depth=depth,
        generation=GenerationInfo.from_json(gen) if gen is not None else None,
        extras=extras or _NO_EXTRAS,
        state=ChatState.from_json(state) if state is not None else None,
        revision=revision,
    )


def _kept_nodes(rows: Sequence[Sequence[Any]], chat_id: str) -> tuple[Node, ...]:
    """The live nodes of path rows (root side first) as a turn keeps them between turns:
    sharing what repeats from node to node rather than holding a copy each. Every node
    holds `chat_id` itself, its parent's id as the parent's own id object, and its
    speaker and the keys and short strings of its extras and generation record as the
    shared objects (`_shared_text`); values are unchanged."""
    nodes: list[Node] = []
    above: str | None = None
    for row in rows:
        node_id, parent = row[0], row[2]
        if not row[6]:
            gen, extras = row[9], row[10]
            shared = (
                node_id,
                chat_id,
                above if parent is not None and parent == above else parent,
                row[3],
                _shared_text(row[4]),
                row[5],
                row[6],
                row[7],
                row[8],
                None if gen is None else _shared_json(_raw_json(gen)),
                None if extras is None else _shared_json(_raw_json(extras)),
                row[11],
                row[12],
            )
            nodes.append(_node_from_raw(shared, row[13]))
        above = node_id
    return tuple(nodes)


def _node_select() -> sa.Select[Any]:
    return sa.select(t.nodes, t.contents.c.text).join(
        t.contents, t.contents.c.hash == t.nodes.c.content_hash
    )


def _revision_from_row(row: Mapping[Any, Any]) -> Revision:
    return Revision(
        chat_id=row["chat_id"],
        number=row["number"],
        kind=RevisionKind(row["kind"]),
        label=row["label"],
        created=_aware(row["created"]),
        target=row["target"],
        undone=bool(row["undone"]),
    )


def _document_data(value: Any) -> dict[str, Any]:
    """A document's data as stored: an object, or its JSON text (PostgreSQL, in key order)."""
    if isinstance(value, str):
        loaded = json.loads(value)
        return dict(loaded) if isinstance(loaded, dict) else {}
    return dict(value or {})


def _document_from_row(row: Mapping[Any, Any], with_blob: bool = True) -> Document:
    return Document(
        id=row["id"],
        kind=row["kind"],
        name=row["name"],
        data=_document_data(row["data"]),
        blob=bytes(row["blob"]) if with_blob and row.get("blob") is not None else None,
        revision=row["revision"],
        created=_aware(row["created"]),
        updated=_aware(row["updated"]),
        owner=row["owner"],
    )
