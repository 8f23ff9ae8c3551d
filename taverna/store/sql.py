"""The SQL store: SQLite in a data folder by default, PostgreSQL by URL, one code path.

Each chat write is one transaction: it first bumps the chat's revision with a
compare-and-set (`WHERE revision = :read`), which both detects a stale write and
takes the write lock, then applies its changes and logs each old and new value in
`changes` so the revision can be undone and redone. SQLite runs in WAL mode with
full fsync on commit: a process killed at any moment leaves the last committed
revision.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection, Engine

from taverna.errors import NotFound, StaleRevision, TavernaError
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
    PathEntry,
    PathTail,
    PathWindow,
    Revision,
    RevisionKind,
    new_id,
)
from taverna.store import schema as t
from taverna.store.repository import (
    UNSET,
    ChatWriter,
    Document,
    DocumentVersion,
    NewChat,
    Store,
)

DB_FILE = "taverna.db"
MIGRATIONS = Path(__file__).resolve().parent / "migrations"


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


def content_hash(text: str) -> str:
    """The key a text is stored under (SHA-256, hex)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ----------------------------------------------------------------- row mapping


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
    if value is None or value.__class__ is dict:
        return value
    return {} if value == "{}" else json.loads(value)


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
        extras=extras or {},
        state=ChatState.from_json(state) if state is not None else None,
        revision=revision,
    )


def _node_select() -> sa.Select[Any]:
    return sa.select(t.nodes, t.contents.c.text).join(
        t.contents, t.contents.c.hash == t.nodes.c.content_hash
    )


# ----------------------------------------------------------------- the writer


class SqlChatWriter(ChatWriter):
    """A unit of work on one chat inside one SQL transaction."""

    def __init__(
        self,
        conn: Connection,
        chat_row: Mapping[Any, Any],
        revision: int,
        label: str,
        now: datetime,
    ) -> None:
        self.conn = conn
        self.chat_id = chat_row["id"]
        self.revision = revision
        self.label = label
        self.now = now
        self.kind = RevisionKind.OPERATION
        self.target: int | None = None
        self._chat_row = dict(chat_row)
        self._changes: list[dict[str, Any]] = []
        self._chat_dirty: dict[str, Any] = {}

    # ---- change log

    def _log(self, entity: str, key: str, field: str, before: Any, after: Any) -> None:
        self._changes.append(
            {
                "chat_id": self.chat_id,
                "revision": self.revision,
                "seq": len(self._changes),
                "entity": entity,
                "key": key,
                "field": field,
                "before": {"v": before},
                "after": {"v": after},
            }
        )

    # ---- reads

    @property
    def chat(self) -> Chat:
        return _chat_from_row(self._chat_row)

    def _node_row(self, node_id: str) -> Mapping[Any, Any]:
        row = (
            self.conn.execute(
                sa.select(t.nodes).where(t.nodes.c.id == node_id, t.nodes.c.chat_id == self.chat_id)
            )
            .mappings()
            .first()
        )
        if row is None:
            raise NotFound(f"no message {node_id} in this chat", field="node_id")
        return row

    def get_node(self, node_id: str) -> Node:
        row = (
            self.conn.execute(
                _node_select().where(t.nodes.c.id == node_id, t.nodes.c.chat_id == self.chat_id)
            )
            .mappings()
            .first()
        )
        if row is None:
            raise NotFound(f"no message {node_id} in this chat", field="node_id")
        return _node_from_row(row, row["text"])

    def children(self, parent_id: str | None, *, include_deleted: bool = False) -> list[Node]:
        return _children(self.conn, self.chat_id, parent_id, include_deleted)

    def path_to(self, node_id: str) -> list[Node]:
        return _path_to(self.conn, self.chat_id, node_id)

    def active_nodes(self) -> list[Node]:
        leaf = self._chat_row["active_leaf_id"]
        return _path_to(self.conn, self.chat_id, leaf) if leaf else []

    def state_at(self, node_id: str | None) -> ChatState:
        return _state_at(self.conn, self.chat_id, node_id, self._chat_row["base_state"])

    def selection(self, parent_id: str | None) -> str | None:
        return self.conn.execute(
            sa.select(t.selections.c.child_id).where(
                t.selections.c.chat_id == self.chat_id,
                t.selections.c.parent_id == (parent_id or ""),
            )
        ).scalar()

    def selections(self) -> dict[str, str]:
        rows = self.conn.execute(
            sa.select(t.selections.c.parent_id, t.selections.c.child_id).where(
                t.selections.c.chat_id == self.chat_id
            )
        )
        return {parent: child for parent, child in rows}

    def descend(self, node_id: str) -> str:
        # Follow the remembered choices down, stopping at a deleted child.
        sql = sa.text(
            """
            WITH RECURSIVE down(id, lvl) AS (
                SELECT id, 0 FROM nodes WHERE id = :start
                UNION ALL
                SELECT s.child_id, down.lvl + 1
                FROM down
                JOIN selections s ON s.chat_id = :chat AND s.parent_id = down.id
                JOIN nodes n ON n.id = s.child_id
                WHERE n.deleted = :no AND down.lvl < 10000000
            )
            SELECT id FROM down ORDER BY lvl DESC LIMIT 1
            """
        )
        found = self.conn.execute(sql, {"start": node_id, "chat": self.chat_id, "no": False})
        return found.scalar() or node_id

    def branches(self) -> list[Branch]:
        return _branches(self.conn, self.chat_id)

    def checkpoints(self) -> list[Checkpoint]:
        return _checkpoints(self.conn, self.chat_id)

    # ---- writes

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
        if parent_id:
            parent = self._node_row(parent_id)
            depth = parent["depth"] + 1
            inherited = parent["state_from"]
        else:
            depth, inherited = 0, None
        node_id = node_id or new_id()
        text_hash = _put_content(self.conn, content)
        row = {
            "id": node_id,
            "chat_id": self.chat_id,
            "parent_id": parent_id or "",
            "role": NodeRole(role).value,
            "speaker": speaker,
            "content_hash": text_hash,
            "hidden": hidden,
            "deleted": False,
            "created": _utc(created or self.now),
            "depth": depth,
            "generation": generation.to_json() if generation else None,
            "extras": dict(extras or {}),
            "state": state.to_json() if state is not None else None,
            "state_from": node_id if state is not None else inherited,
            "revision": self.revision,
        }
        self.conn.execute(t.nodes.insert(), row)
        self._log("node", node_id, "*", None, _row_json(row))
        return _node_from_row(row, content)

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
        row = self._node_row(node_id)
        new: dict[str, Any] = {}
        if content is not UNSET:
            new["content_hash"] = _put_content(self.conn, content)
        if speaker is not UNSET:
            new["speaker"] = speaker
        if hidden is not UNSET:
            new["hidden"] = bool(hidden)
        if deleted is not UNSET:
            new["deleted"] = bool(deleted)
        if extras is not UNSET:
            new["extras"] = dict(extras)
        if generation is not UNSET:
            new["generation"] = generation.to_json() if generation else None
        if state is not UNSET:
            new["state"] = state.to_json() if state is not None else None
        changed = {k: v for k, v in new.items() if row[k] != v}
        for column, value in changed.items():
            self._set_node_field(node_id, column, value)
            self._log("node", node_id, column, row[column], value)
        return self.get_node(node_id)

    def _set_node_field(self, node_id: str, column: str, value: Any) -> None:
        self.conn.execute(
            t.nodes.update()
            .where(t.nodes.c.id == node_id)
            .values({column: value, "revision": self.revision})
        )
        if column == "state":
            self._refresh_state_from(node_id)

    def _refresh_state_from(self, node_id: str) -> None:
        """Re-point `state_from` of a node and of the descendants that inherit from it."""
        row = self._node_row(node_id)
        if row["state"] is not None:
            source = node_id
        elif row["parent_id"]:
            source = self._node_row(row["parent_id"])["state_from"]
        else:
            source = None
        sql = sa.text(
            """
            UPDATE nodes SET state_from = :source WHERE id IN (
                WITH RECURSIVE sub(id) AS (
                    SELECT id FROM nodes WHERE id = :node
                    UNION ALL
                    SELECT n.id FROM nodes n JOIN sub ON n.chat_id = :chat AND n.parent_id = sub.id
                    WHERE n.state IS NULL
                )
                SELECT id FROM sub
            )
            """
        )
        self.conn.execute(sql, {"source": source, "node": node_id, "chat": self.chat_id})

    def set_selection(self, parent_id: str | None, child_id: str | None) -> None:
        before = self.selection(parent_id)
        if before == child_id:
            return
        self._apply_selection(parent_id or "", child_id)
        self._log("selection", parent_id or "", "child_id", before, child_id)

    def _apply_selection(self, parent_key: str, child_id: str | None) -> None:
        where = (t.selections.c.chat_id == self.chat_id, t.selections.c.parent_id == parent_key)
        if child_id is None:
            self.conn.execute(t.selections.delete().where(*where))
            return
        done = self.conn.execute(t.selections.update().where(*where).values(child_id=child_id))
        if done.rowcount == 0:
            self.conn.execute(
                t.selections.insert().values(
                    chat_id=self.chat_id, parent_id=parent_key, child_id=child_id
                )
            )

    def _set_chat(self, column: str, value: Any) -> None:
        before = self._chat_row[column]
        if before == value:
            return
        self._chat_row[column] = value
        self._chat_dirty[column] = value
        self._log("chat", self.chat_id, column, _to_json_value(column, before), value)

    def set_active(self, leaf_id: str | None, *, branch_id: str | None = UNSET) -> None:
        if branch_id is not UNSET:
            self._set_chat("active_branch_id", branch_id)
        self._set_chat("active_leaf_id", leaf_id)
        active = self._chat_row["active_branch_id"]
        if active:
            before = self.conn.execute(
                sa.select(t.branches.c.head_id).where(t.branches.c.id == active)
            ).scalar()
            if before != leaf_id:
                self.conn.execute(
                    t.branches.update().where(t.branches.c.id == active).values(head_id=leaf_id)
                )
                self._log("branch", active, "head_id", before, leaf_id)

    def update_chat(
        self,
        *,
        title: str = UNSET,
        characters: tuple[CharacterRef, ...] = UNSET,
        user_name: str = UNSET,
        base_state: ChatState = UNSET,
        metadata: Mapping[str, Any] = UNSET,
    ) -> Chat:
        if title is not UNSET:
            self._set_chat("title", title)
        if characters is not UNSET:
            self._set_chat("characters", _chars_json(characters))
        if user_name is not UNSET:
            self._set_chat("user_name", user_name)
        if base_state is not UNSET:
            self._set_chat("base_state", base_state.to_json())
        if metadata is not UNSET:
            self._set_chat("metadata", dict(metadata))
        return self.chat

    def put_branch(self, branch: Branch) -> None:
        row = {
            "id": branch.id,
            "chat_id": self.chat_id,
            "name": branch.name,
            "head_id": branch.head_id,
            "created": _utc(branch.created or self.now),
        }
        self._put_entity("branch", t.branches, branch.id, row)

    def remove_branch(self, branch_id: str) -> None:
        self._remove_entity("branch", t.branches, branch_id)

    def put_checkpoint(self, checkpoint: Checkpoint) -> None:
        row = {
            "id": checkpoint.id,
            "chat_id": self.chat_id,
            "name": checkpoint.name,
            "node_id": checkpoint.node_id,
            "created": _utc(checkpoint.created or self.now),
        }
        self._put_entity("checkpoint", t.checkpoints, checkpoint.id, row)

    def remove_checkpoint(self, checkpoint_id: str) -> None:
        self._remove_entity("checkpoint", t.checkpoints, checkpoint_id)

    def _put_entity(self, kind: str, table: sa.Table, key: str, row: dict[str, Any]) -> None:
        """Write a whole branch or checkpoint row and log it, so undo can put back the old one."""
        before = self._entity_row(table, key)
        self._replace_row(table, key, row)
        self._log(kind, key, "*", before, _row_json(row))

    def _remove_entity(self, kind: str, table: sa.Table, key: str) -> None:
        """Delete a branch or checkpoint row and log it; NotFound names `<kind>_id`."""
        before = self._entity_row(table, key)
        if before is None:
            raise NotFound(f"no such {kind}", field=f"{kind}_id")
        self._replace_row(table, key, None)
        self._log(kind, key, "*", before, None)

    def _entity_row(self, table: sa.Table, key: str) -> dict[str, Any] | None:
        row = self.conn.execute(sa.select(table).where(table.c.id == key)).mappings().first()
        return _row_json(row) if row is not None else None

    def _replace_row(self, table: sa.Table, key: str, row: Mapping[Any, Any] | None) -> None:
        self.conn.execute(table.delete().where(table.c.id == key))
        if row is not None:
            self.conn.execute(table.insert(), _row_from_json(row))

    # ---- undo / redo

    def undo(self) -> Revision:
        number = self.conn.execute(
            sa.select(sa.func.max(t.revisions.c.number)).where(
                t.revisions.c.chat_id == self.chat_id,
                t.revisions.c.kind == RevisionKind.OPERATION.value,
                t.revisions.c.undone == sa.false(),
            )
        ).scalar()
        if number is None:
            raise NotFound("nothing to undo", field="revision")
        for change in reversed(self._changes_of(number)):
            self._apply(change, change["before"]["v"])
        self._mark(number, undone=True)
        self.kind, self.target = RevisionKind.UNDO, number
        return self._revision(number)

    def redo(self) -> Revision:
        number = self.conn.execute(
            sa.select(sa.func.min(t.revisions.c.number)).where(
                t.revisions.c.chat_id == self.chat_id,
                t.revisions.c.kind == RevisionKind.OPERATION.value,
                t.revisions.c.undone == sa.true(),
                t.revisions.c.redoable == sa.true(),
            )
        ).scalar()
        if number is None:
            raise NotFound("nothing to redo", field="revision")
        for change in self._changes_of(number):
            self._apply(change, change["after"]["v"])
        self._mark(number, undone=False)
        self.kind, self.target = RevisionKind.REDO, number
        return self._revision(number)

    def _changes_of(self, number: int) -> list[Mapping[Any, Any]]:
        rows = self.conn.execute(
            sa.select(t.changes)
            .where(t.changes.c.chat_id == self.chat_id, t.changes.c.revision == number)
            .order_by(t.changes.c.seq)
        )
        return list(rows.mappings())

    def _mark(self, number: int, *, undone: bool) -> None:
        self.conn.execute(
            t.revisions.update()
            .where(t.revisions.c.chat_id == self.chat_id, t.revisions.c.number == number)
            .values(undone=undone)
        )

    def _revision(self, number: int) -> Revision:
        row = (
            self.conn.execute(
                sa.select(t.revisions).where(
                    t.revisions.c.chat_id == self.chat_id, t.revisions.c.number == number
                )
            )
            .mappings()
            .one()
        )
        return _revision_from_row(row)

    def _apply(self, change: Mapping[Any, Any], value: Any) -> None:
        """Set one logged value (the old one to undo, the new one to redo)."""
        entity, key, column = change["entity"], change["key"], change["field"]
        if entity == "node":
            if column == "*":
                self.conn.execute(t.nodes.delete().where(t.nodes.c.id == key))
                if value is not None:
                    self.conn.execute(t.nodes.insert(), _row_from_json(value))
            else:
                self._set_node_field(key, column, value)
        elif entity == "chat":
            value = _from_json_value(column, value)
            self._chat_row[column] = value
            self._chat_dirty[column] = value
        elif entity == "selection":
            self._apply_selection(key, value)
        elif entity == "branch":
            if column == "*":
                self._replace_row(t.branches, key, value)
            else:
                self.conn.execute(
                    t.branches.update().where(t.branches.c.id == key).values({column: value})
                )
        elif entity == "checkpoint":
            self._replace_row(t.checkpoints, key, value)
        else:  # pragma: no cover - the log only holds the kinds above
            raise TavernaError(f"unknown change kind {entity!r}")

    # ---- commit

    def finish(self) -> None:
        """Write the chat row, the revision and its change log (inside the transaction)."""
        values = dict(self._chat_dirty)
        if values:
            self.conn.execute(t.chats.update().where(t.chats.c.id == self.chat_id).values(values))
        if self.kind is RevisionKind.OPERATION:
            # A new operation ends what could be redone (git-like: no branching history).
            self.conn.execute(
                t.revisions.update()
                .where(
                    t.revisions.c.chat_id == self.chat_id,
                    t.revisions.c.undone == sa.true(),
                    t.revisions.c.redoable == sa.true(),
                )
                .values(redoable=False)
            )
        self.conn.execute(
            t.revisions.insert().values(
                chat_id=self.chat_id,
                number=self.revision,
                kind=self.kind.value,
                label=self.label,
                created=self.now,
                target=self.target,
                undone=False,
                redoable=True,
            )
        )
        if self._changes:
            self.conn.execute(t.changes.insert(), self._changes)


# --------------------------------------------------------------- shared queries


def _put_content(conn: Connection, text: str) -> str:
    key = content_hash(text)
    if conn.dialect.name == "sqlite":
        # SQLite runs one write at a time: nothing can delete the row before we commit.
        found = conn.execute(sa.select(t.contents.c.hash).where(t.contents.c.hash == key)).first()
        if found is None:
            conn.execute(t.contents.insert().values(hash=key, text=text))
        return key
    # PostgreSQL: another transaction may be inserting the same text, or deleting it as
    # its last chat goes. Insert if absent, then hold a key-share lock on the row until
    # commit so no delete can take it away under our messages; a row deleted while we
    # waited for that lock is simply inserted again.
    insert = postgresql.insert(t.contents).values(hash=key, text=text).on_conflict_do_nothing()
    lock = (
        sa.select(t.contents.c.hash).where(t.contents.c.hash == key).with_for_update(key_share=True)
    )
    for _ in range(5):
        conn.execute(insert)
        if conn.execute(lock).first() is not None:
            return key
    raise TavernaError("a message text kept being deleted while it was stored; try again")


def _children(
    conn: Connection, chat_id: str, parent_id: str | None, include_deleted: bool
) -> list[Node]:
    query = _node_select().where(
        t.nodes.c.chat_id == chat_id, t.nodes.c.parent_id == (parent_id or "")
    )
    if not include_deleted:
        query = query.where(t.nodes.c.deleted == sa.false())
    rows = conn.execute(query.order_by(t.nodes.c.id)).mappings()
    return [_node_from_row(r, r["text"]) for r in rows]


_PATH_SQL = """
WITH RECURSIVE path(id, parent_id) AS (
    SELECT id, parent_id FROM nodes WHERE id = :leaf AND chat_id = :chat
    UNION ALL
    SELECT n.id, n.parent_id FROM nodes n JOIN path p ON n.id = p.parent_id
)
"""


def _path_to(conn: Connection, chat_id: str, node_id: str) -> list[Node]:
    sql = sa.text(
        _PATH_SQL
        + f"""
        SELECT {_RAW_NODE_SQL}, c.text FROM path p
        JOIN nodes n ON n.id = p.id
        JOIN contents c ON c.hash = n.content_hash
        ORDER BY n.depth
        """
    )
    rows = conn.execute(sql, {"leaf": node_id, "chat": chat_id}).all()
    if not rows:
        raise NotFound(f"no message {node_id} in this chat", field="node_id")
    return [_node_from_raw(r, r[13]) for r in rows]


def _state_at(
    conn: Connection, chat_id: str, node_id: str | None, base: Mapping[Any, Any] | None
) -> ChatState:
    if node_id is None:
        return ChatState.from_json(base or {})
    source = conn.execute(
        sa.select(t.nodes.c.state_from).where(t.nodes.c.id == node_id, t.nodes.c.chat_id == chat_id)
    ).first()
    if source is None:
        raise NotFound(f"no message {node_id} in this chat", field="node_id")
    if source[0] is None:
        return ChatState.from_json(base or {})
    state = conn.execute(sa.select(t.nodes.c.state).where(t.nodes.c.id == source[0])).scalar()
    return ChatState.from_json(state or {})


def _branches(conn: Connection, chat_id: str) -> list[Branch]:
    rows = conn.execute(
        sa.select(t.branches)
        .where(t.branches.c.chat_id == chat_id)
        .order_by(t.branches.c.created, t.branches.c.id)
    ).mappings()
    return [
        Branch(r["id"], r["chat_id"], r["name"], r["head_id"], _aware(r["created"])) for r in rows
    ]


def _checkpoints(conn: Connection, chat_id: str) -> list[Checkpoint]:
    rows = conn.execute(
        sa.select(t.checkpoints)
        .where(t.checkpoints.c.chat_id == chat_id)
        .order_by(t.checkpoints.c.created, t.checkpoints.c.id)
    ).mappings()
    return [
        Checkpoint(r["id"], r["chat_id"], r["name"], r["node_id"], _aware(r["created"]))
        for r in rows
    ]


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


def _document_from_row(row: Mapping[Any, Any], with_blob: bool = True) -> Document:
    return Document(
        id=row["id"],
        kind=row["kind"],
        name=row["name"],
        data=dict(row["data"] or {}),
        blob=bytes(row["blob"]) if with_blob and row.get("blob") is not None else None,
        revision=row["revision"],
        created=_aware(row["created"]),
        updated=_aware(row["updated"]),
        owner=row["owner"],
    )


# ------------------------------------------------------------ path windows
#
# A page of the active path is read by walking from a known node, never from the root
# or the leaf: up the parent links (`path_before`) or down the remembered choices
# (`path_after`), stopping once the page has its live messages.

_SIBLINGS = (
    "(SELECT COUNT(*) FROM nodes s WHERE s.chat_id = :chat"
    " AND s.parent_id = n.parent_id AND s.deleted = :no{extra})"
)
_WINDOW_ROWS = f"""
    SELECT {_RAW_NODE_SQL}, c.text,
        {_SIBLINGS.format(extra="")} AS candidate_count,
        {_SIBLINGS.format(extra=" AND s.id < n.id")} AS candidate_index
    FROM walk w
    JOIN nodes n ON n.id = w.id
    JOIN contents c ON c.hash = n.content_hash
    ORDER BY n.depth
"""
_CLIMB_SQL = (
    """
    WITH RECURSIVE walk(id, parent_id, seen) AS (
        SELECT id, parent_id, CASE WHEN deleted = :no AND :own = 1 THEN 1 ELSE 0 END
        FROM nodes WHERE id = :start AND chat_id = :chat
        UNION ALL
        SELECT n.id, n.parent_id, w.seen + CASE WHEN n.deleted = :no THEN 1 ELSE 0 END
        FROM nodes n JOIN walk w ON n.id = w.parent_id
        WHERE w.seen < :limit
    )
    """
    + _WINDOW_ROWS
)
_DESCENT_SQL = (
    """
    WITH RECURSIVE walk(id, seen) AS (
        SELECT s.child_id, CASE WHEN n.deleted = :no THEN 1 ELSE 0 END
        FROM selections s JOIN nodes n ON n.id = s.child_id
        WHERE s.chat_id = :chat AND s.parent_id = :start AND :start != :leaf
        UNION ALL
        SELECT s.child_id, w.seen + CASE WHEN n.deleted = :no THEN 1 ELSE 0 END
        FROM walk w
        JOIN selections s ON s.chat_id = :chat AND s.parent_id = w.id
        JOIN nodes n ON n.id = s.child_id
        WHERE w.seen < :limit AND w.id != :leaf
    )
    """
    + _WINDOW_ROWS
)


def _shallowest_tombstone(conn: Connection, chat_id: str) -> int | None:
    """The depth of the chat's shallowest deleted message (on the partial index), if any."""
    found: int | None = conn.execute(
        sa.select(sa.func.min(t.nodes.c.depth)).where(
            t.nodes.c.chat_id == chat_id, t.nodes.c.deleted == sa.true()
        )
    ).scalar()
    return found


def _climb_marks(
    conn: Connection, chat_id: str, start: str, floor: int
) -> list[tuple[str, bool, bool]]:
    """`(id, hidden, deleted)` of a node and its ancestors down to depth `floor`, the
    node first: the stretch of a path that a count of its marked messages must see."""
    rows = conn.execute(
        sa.text(
            """
            WITH RECURSIVE up(id, parent_id, hidden, deleted, depth) AS (
                SELECT id, parent_id, hidden, deleted, depth FROM nodes
                WHERE id = :start AND chat_id = :chat
                UNION ALL
                SELECT n.id, n.parent_id, n.hidden, n.deleted, n.depth
                FROM nodes n JOIN up ON n.id = up.parent_id
                WHERE n.depth >= :floor
            )
            SELECT id, hidden, deleted FROM up ORDER BY depth DESC
            """
        ),
        {"start": start, "chat": chat_id, "floor": floor},
    ).all()
    return [(row[0], bool(row[1]), bool(row[2])) for row in rows]


def _live_above(
    conn: Connection, chat_id: str, node_id: str, depth: int, shallowest: int | None
) -> int:
    """How many live messages are above a node: its depth less the tombstones above it.

    Only the stretch below the shallowest tombstone can hold one, so a chat without
    deleted messages answers from the depth alone.
    """
    if shallowest is None or shallowest >= depth:
        return depth
    above = _climb_marks(conn, chat_id, node_id, shallowest)[1:]
    return depth - sum(1 for _, _, deleted in above if deleted)


def _hidden_above(conn: Connection, chat_id: str, node_id: str, depth: int) -> int:
    """How many live hidden messages are above a node on its path.

    Only the stretch below the shallowest hidden message can hold one (partial index),
    so a chat that hides nothing above the node answers at once.
    """
    hidden = "hidden = 1" if conn.dialect.name == "sqlite" else "hidden"
    shallowest = conn.execute(
        sa.text(f"SELECT MIN(depth) FROM nodes WHERE chat_id = :chat AND {hidden}"),
        {"chat": chat_id},
    ).scalar()
    if shallowest is None or shallowest >= depth:
        return 0
    above = _climb_marks(conn, chat_id, node_id, shallowest)[1:]
    return sum(1 for _, hidden, deleted in above if hidden and not deleted)


def _window_entries(rows: Sequence[Sequence[Any]], start: int) -> tuple[PathEntry, ...]:
    """Window rows (path order, tombstones included) as live entries from `start` on."""
    entries: list[PathEntry] = []
    position = start
    for row in rows:
        if row[6]:  # deleted: on the path, never shown
            continue
        node = _node_from_raw(row, row[13])
        entries.append(PathEntry(node, position, row[15], max(row[14], 1)))
        position += 1
    return tuple(entries)


def _node_place(conn: Connection, chat_id: str, node_id: str) -> tuple[int, bool]:
    """A node's depth and whether it is deleted; NotFound if the chat has no such node."""
    row = conn.execute(
        sa.select(t.nodes.c.depth, t.nodes.c.deleted).where(
            t.nodes.c.id == node_id, t.nodes.c.chat_id == chat_id
        )
    ).first()
    if row is None:
        raise NotFound(f"no message {node_id} in this chat", field="node_id")
    return int(row[0]), bool(row[1])


def _path_total(
    conn: Connection, chat: Chat, shallowest: int | None, leaf: tuple[int, bool] | None = None
) -> int:
    """Live messages on the whole active path, from the leaf's depth and the tombstones."""
    if chat.active_leaf_id is None:
        return 0
    depth, deleted = leaf or _node_place(conn, chat.id, chat.active_leaf_id)
    return _live_above(conn, chat.id, chat.active_leaf_id, depth, shallowest) + (not deleted)


# ----------------------------------------------------------------- the store


class SqlStore(Store):
    """The store on one SQLAlchemy engine (SQLite or PostgreSQL)."""

    def __init__(
        self,
        engine: Engine,
        *,
        url: str,
        clock: Callable[[], datetime] = _utcnow,
        schema: str | None = None,
    ) -> None:
        self.engine = engine
        self.url = url
        self.schema = schema  # the PostgreSQL schema the tables are in (None: the default)
        self.clock = clock

    def close(self) -> None:
        self.engine.dispose()

    def _read(self) -> Connection:
        """A connection for reading only (SQLite: a deferred transaction, no write lock)."""
        return self.engine.connect().execution_options(taverna_read=True)

    # ---- chats

    def _new_chat_row(self, new: NewChat, now: datetime) -> dict[str, Any]:
        created = _utc(new.created or now)
        return {
            "id": new.id or new_id(),
            "owner": new.owner,
            "title": new.title,
            "characters": _chars_json(new.characters),
            "group_id": new.group_id,
            "user_name": new.user_name,
            "active_leaf_id": None,
            "active_branch_id": None,
            "base_state": new.base_state.to_json(),
            "metadata": dict(new.metadata),
            "created": created,
            "updated": created,
            "revision": 1,
        }

    def _insert_chat(
        self, conn: Connection, row: dict[str, Any], label: str, now: datetime
    ) -> None:
        conn.execute(t.chats.insert(), row)
        conn.execute(
            t.revisions.insert().values(
                chat_id=row["id"],
                number=1,
                kind=RevisionKind.CREATE.value,
                label=label,
                created=now,
                target=None,
                undone=False,
                redoable=False,
            )
        )

    def create_chat(self, new: NewChat) -> Chat:
        now = _utc(self.clock())
        row = self._new_chat_row(new, now)
        branch_id = new_id()
        row["active_branch_id"] = branch_id
        with self.engine.begin() as conn:
            self._insert_chat(conn, row, "create", now)
            conn.execute(
                t.branches.insert().values(
                    id=branch_id, chat_id=row["id"], name="main", head_id=None, created=now
                )
            )
        return _chat_from_row(row)

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
        now = _utc(self.clock())
        chat_row = self._new_chat_row(new, now)
        chat_id = chat_row["id"]
        info: dict[str, tuple[int, str | None]] = {}
        node_rows: list[dict[str, Any]] = []
        texts: dict[str, str] = {}
        for node in nodes:
            parent = node.parent_id or ""
            if parent and parent not in info:
                raise TavernaError(
                    f"message {node.id} comes before its parent {parent}", field="nodes"
                )
            if node.id in info:
                raise TavernaError(f"message id {node.id} appears twice", field="nodes")
            depth, inherited = info[parent] if parent else (-1, None)
            state_from = node.id if node.state is not None else inherited
            info[node.id] = (depth + 1, state_from)
            key = content_hash(node.content)
            texts[key] = node.content
            node_rows.append(
                {
                    "id": node.id,
                    "chat_id": chat_id,
                    "parent_id": parent,
                    "role": NodeRole(node.role).value,
                    "speaker": node.speaker,
                    "content_hash": key,
                    "hidden": node.hidden,
                    "deleted": node.deleted,
                    "created": _utc(node.created or now),
                    "depth": depth + 1,
                    "generation": node.generation.to_json() if node.generation else None,
                    "extras": dict(node.extras),
                    "state": node.state.to_json() if node.state is not None else None,
                    "state_from": state_from,
                    "revision": 1,
                }
            )
        if active_leaf_id is not None and active_leaf_id not in info:
            raise TavernaError("the active leaf is not among the messages", field="active_leaf_id")
        for branch in branches:
            if branch.head_id is not None and branch.head_id not in info:
                raise TavernaError(
                    f"branch {branch.name!r} points at no message of the chat", field="branches"
                )
        for checkpoint in checkpoints:
            if checkpoint.node_id not in info:
                raise TavernaError(
                    f"checkpoint {checkpoint.name!r} points at no message of the chat",
                    field="checkpoints",
                )
        for parent_key, child in (selections or {}).items():
            if child not in info or (parent_key and parent_key not in info):
                raise TavernaError("a selection names no message of the chat", field="selections")
        chosen = dict(selections) if selections is not None else {}
        if selections is None:
            for row in node_rows:  # newest child wins, then the active path overrides
                chosen[row["parent_id"]] = row["id"]
            by_id = {row["id"]: row for row in node_rows}
            current = active_leaf_id
            while current:
                parent = by_id[current]["parent_id"]
                chosen[parent] = current
                current = parent or None
        branch_rows = [
            {
                "id": b.id,
                "chat_id": chat_id,
                "name": b.name,
                "head_id": b.head_id,
                "created": _utc(b.created or now),
            }
            for b in branches
        ] or [
            {
                "id": new_id(),
                "chat_id": chat_id,
                "name": "main",
                "head_id": active_leaf_id,
                "created": now,
            }
        ]
        chat_row["active_branch_id"] = branch_rows[0]["id"]
        chat_row["active_leaf_id"] = active_leaf_id
        with self.engine.begin() as conn:
            self._insert_chat(conn, chat_row, "import", now)
            _insert_missing_contents(conn, texts)
            _bulk_insert(conn, t.nodes, node_rows)
            _bulk_insert(
                conn,
                t.selections,
                [{"chat_id": chat_id, "parent_id": p, "child_id": c} for p, c in chosen.items()],
            )
            conn.execute(t.branches.insert(), branch_rows)
            if checkpoints:
                conn.execute(
                    t.checkpoints.insert(),
                    [
                        {
                            "id": c.id,
                            "chat_id": chat_id,
                            "name": c.name,
                            "node_id": c.node_id,
                            "created": _utc(c.created or now),
                        }
                        for c in checkpoints
                    ],
                )
        return _chat_from_row(chat_row)

    @contextmanager
    def write(self, chat_id: str, *, revision: int, label: str) -> Iterator[SqlChatWriter]:
        now = _utc(self.clock())
        with self.engine.begin() as conn:
            bumped = conn.execute(
                t.chats.update()
                .where(t.chats.c.id == chat_id, t.chats.c.revision == revision)
                .values(revision=revision + 1, updated=now)
            )
            if bumped.rowcount != 1:
                current = conn.execute(
                    sa.select(t.chats.c.revision).where(t.chats.c.id == chat_id)
                ).scalar()
                if current is None:
                    raise NotFound(f"no chat {chat_id}", field="chat_id")
                raise StaleRevision(
                    f"the chat is at revision {current}, not {revision}: reload and retry",
                    current_revision=current,
                    expected=revision,
                )
            row = conn.execute(sa.select(t.chats).where(t.chats.c.id == chat_id)).mappings().one()
            writer = SqlChatWriter(conn, row, revision + 1, label, now)
            yield writer
            writer.finish()

    def get_chat(self, chat_id: str) -> Chat:
        with self._read() as conn:
            return _chat_from_row(self._chat_row(conn, chat_id))

    @staticmethod
    def _chat_row(conn: Connection, chat_id: str) -> Mapping[Any, Any]:
        row = conn.execute(sa.select(t.chats).where(t.chats.c.id == chat_id)).mappings().first()
        if row is None:
            raise NotFound(f"no chat {chat_id}", field="chat_id")
        return row

    def list_chats(self, *, owner: str = "", character: str | None = None) -> list[ChatListing]:
        leaf = t.nodes.alias("leaf")
        node_count = (
            sa.select(sa.func.count()).where(t.nodes.c.chat_id == t.chats.c.id).scalar_subquery()
        )
        branch_count = (
            sa.select(sa.func.count()).where(t.branches.c.chat_id == t.chats.c.id).scalar_subquery()
        )
        checkpoint_count = (
            sa.select(sa.func.count())
            .where(t.checkpoints.c.chat_id == t.chats.c.id)
            .scalar_subquery()
        )
        query = (
            sa.select(
                t.chats,
                leaf.c.depth.label("leaf_depth"),
                node_count.label("node_count"),
                branch_count.label("branch_count"),
                checkpoint_count.label("checkpoint_count"),
            )
            .outerjoin(leaf, leaf.c.id == t.chats.c.active_leaf_id)
            .where(t.chats.c.owner == owner)
            .order_by(t.chats.c.updated.desc(), t.chats.c.id.desc())
        )
        with self._read() as conn:
            rows = conn.execute(query).mappings().all()
        result = []
        for row in rows:
            chat = _chat_from_row(row)
            if character is not None and not any(
                character in (c.name, c.document_id) for c in chat.characters
            ):
                continue
            depth = row["leaf_depth"]
            result.append(
                ChatListing(
                    chat=chat,
                    path_length=0 if depth is None else depth + 1,
                    node_count=row["node_count"],
                    branch_count=row["branch_count"],
                    checkpoint_count=row["checkpoint_count"],
                )
            )
        return result

    def delete_chat(self, chat_id: str, *, revision: int) -> None:
        with self.engine.begin() as conn:
            current = conn.execute(
                sa.select(t.chats.c.revision).where(t.chats.c.id == chat_id)
            ).scalar()
            if current is None:
                raise NotFound(f"no chat {chat_id}", field="chat_id")
            if current != revision:
                raise StaleRevision(
                    f"the chat is at revision {current}, not {revision}",
                    current_revision=current,
                    expected=revision,
                )
            texts = _history_hashes(
                conn, t.nodes.c.chat_id == chat_id, t.changes.c.chat_id == chat_id
            )
            for table in (
                t.sent_prompts,
                t.changes,
                t.revisions,
                t.checkpoints,
                t.branches,
                t.selections,
                t.nodes,
            ):
                conn.execute(table.delete().where(table.c.chat_id == chat_id))
            conn.execute(t.chats.delete().where(t.chats.c.id == chat_id))
            # A deleted chat's words leave the database, unless another chat has the
            # same text in a message or in its history (texts are shared by hash).
            if conn.dialect.name != "sqlite":
                # PostgreSQL: lock the rows first, passing over those a writer holds (it is
                # storing a message with that text); the check below then runs on a fresh
                # snapshot and sees every writer that committed before the lock.
                candidates = sorted(texts)
                texts = set()
                for start in range(0, len(candidates), 500):
                    chunk = candidates[start : start + 500]
                    locked = (
                        sa.select(t.contents.c.hash)
                        .where(t.contents.c.hash.in_(chunk))
                        .with_for_update(skip_locked=True)
                    )
                    texts.update(conn.execute(locked).scalars())
            texts -= _history_hashes(conn, sa.true(), sa.true())
            unused = sorted(texts)
            for start in range(0, len(unused), 500):
                conn.execute(
                    t.contents.delete().where(t.contents.c.hash.in_(unused[start : start + 500]))
                )

    def get_node(self, chat_id: str, node_id: str) -> Node:
        with self._read() as conn:
            row = (
                conn.execute(
                    _node_select().where(t.nodes.c.id == node_id, t.nodes.c.chat_id == chat_id)
                )
                .mappings()
                .first()
            )
        if row is None:
            raise NotFound(f"no message {node_id} in this chat", field="node_id")
        return _node_from_row(row, row["text"])

    def children(self, chat_id: str, parent_id: str | None) -> list[Node]:
        with self._read() as conn:
            return _children(conn, chat_id, parent_id, False)

    def path_to(self, chat_id: str, node_id: str) -> list[Node]:
        with self._read() as conn:
            return _path_to(conn, chat_id, node_id)

    def state_at(self, chat_id: str, node_id: str | None) -> ChatState:
        with self._read() as conn:
            row = self._chat_row(conn, chat_id)
            return _state_at(conn, chat_id, node_id, row["base_state"])

    def active_path(
        self, chat_id: str, *, include_deleted: bool = False, tail: int | None = None
    ) -> ActivePath:
        sibling_count = (
            "(SELECT COUNT(*) FROM nodes s WHERE s.chat_id = :chat"
            " AND s.parent_id = n.parent_id AND s.deleted = :no{extra})"
        )
        if tail is None:
            walk = _PATH_SQL
        else:
            # Climb only until `tail` live messages are collected.
            walk = """
            WITH RECURSIVE path(id, parent_id, seen) AS (
                SELECT id, parent_id, CASE WHEN deleted = :no THEN 1 ELSE 0 END
                FROM nodes WHERE id = :leaf AND chat_id = :chat
                UNION ALL
                SELECT n.id, n.parent_id, p.seen + CASE WHEN n.deleted = :no THEN 1 ELSE 0 END
                FROM nodes n JOIN path p ON n.id = p.parent_id
                WHERE p.seen < :tail
            )
            """
        sql = sa.text(
            walk
            + f"""
            SELECT {_RAW_NODE_SQL}, c.text,
                {sibling_count.format(extra="")} AS candidate_count,
                {sibling_count.format(extra=" AND s.id < n.id")} AS candidate_index
            FROM path p
            JOIN nodes n ON n.id = p.id
            JOIN contents c ON c.hash = n.content_hash
            ORDER BY n.depth
            """
        )
        params = {"leaf": "", "chat": chat_id, "no": False, "tail": max(tail or 0, 1)}
        with self._read() as conn:
            chat = _chat_from_row(self._chat_row(conn, chat_id))
            leaf = chat.active_leaf_id
            params["leaf"] = leaf or ""
            rows = conn.execute(sql, params).all() if leaf and tail != 0 else []
            position = 0
            state = chat.base_state
            if tail is not None and leaf:
                state = _state_at(conn, chat_id, leaf, chat.base_state.to_json())
                # Spelled as the partial index's own condition, so the index serves it.
                deleted = "deleted = 1" if conn.dialect.name == "sqlite" else "deleted"
                tombstones = conn.execute(
                    sa.text(f"SELECT id FROM nodes WHERE chat_id = :chat AND {deleted} LIMIT 1"),
                    {"chat": chat_id},
                ).first()
                if rows and tombstones is None:  # no deleted message: position is depth
                    position = rows[0][8]
                elif rows and (rows[0][2] or ""):  # the window starts below the root
                    live = conn.execute(
                        sa.text(
                            _PATH_SQL + "SELECT COUNT(*) FROM path p JOIN nodes n ON n.id = p.id"
                            " WHERE n.deleted = :no"
                        ),
                        params,
                    ).scalar()
                    position = (live or 0) - sum(1 for r in rows if not r[6])
        entries: list[PathEntry] = []
        for row in rows:
            node = _node_from_raw(row, row[13])
            if tail is None and node.state is not None:
                state = node.state
            if node.deleted and not include_deleted:
                continue
            count, index = row[14], row[15]
            if node.deleted:
                count += 1
            entries.append(PathEntry(node, position, index, max(count, 1)))
            if not node.deleted:
                position += 1
        return ActivePath(chat=chat, entries=tuple(entries), state=state)

    def path_before(self, chat_id: str, node_id: str | None, *, limit: int) -> PathWindow:
        with self._read() as conn:
            chat = _chat_from_row(self._chat_row(conn, chat_id))
            start = node_id if node_id is not None else chat.active_leaf_id
            if start is None:
                return PathWindow(chat, (), 0, 0)
            place = _node_place(conn, chat_id, start)
            own = 1 if node_id is None else 0
            rows = conn.execute(
                sa.text(_CLIMB_SQL),
                {"start": start, "chat": chat_id, "no": False, "own": own, "limit": max(limit, 0)},
            ).all()
            if not own:
                rows = rows[:-1]  # the node itself closes the climb
            if limit <= 0:
                rows = []
            shallowest = _shallowest_tombstone(conn, chat_id)
            total = _path_total(conn, chat, shallowest, place if own else None)
            if rows:
                first = rows[0]
                begin = _live_above(conn, chat_id, first[0], first[8], shallowest)
            else:
                begin = _live_above(conn, chat_id, start, place[0], shallowest)
                begin += 1 if own and not place[1] else 0
            return PathWindow(chat, _window_entries(rows, begin), begin, total)

    def path_after(self, chat_id: str, node_id: str | None, *, limit: int) -> PathWindow:
        with self._read() as conn:
            chat = _chat_from_row(self._chat_row(conn, chat_id))
            shallowest = _shallowest_tombstone(conn, chat_id)
            begin = 0
            if node_id is not None:
                depth, deleted = _node_place(conn, chat_id, node_id)
                begin = _live_above(conn, chat_id, node_id, depth, shallowest) + (not deleted)
            rows: Sequence[Sequence[Any]] = []
            if chat.active_leaf_id is not None and limit > 0:
                params = {
                    "start": node_id or "",
                    "leaf": chat.active_leaf_id,
                    "chat": chat_id,
                    "no": False,
                    "limit": limit,
                }
                rows = conn.execute(sa.text(_DESCENT_SQL), params).all()
            total = _path_total(conn, chat, shallowest)
            return PathWindow(chat, _window_entries(rows, begin), begin, total)

    def tree(self, chat_id: str) -> ChatTree:
        with self._read() as conn:
            chat = _chat_from_row(self._chat_row(conn, chat_id))
            rows = conn.execute(
                sa.text(
                    f"SELECT {_RAW_NODE_SQL}, c.text FROM nodes n"
                    " JOIN contents c ON c.hash = n.content_hash"
                    " WHERE n.chat_id = :chat ORDER BY n.depth, n.id"
                ),
                {"chat": chat_id},
            ).all()
            nodes = tuple(_node_from_raw(r, r[13]) for r in rows)
            chosen = conn.execute(
                sa.select(t.selections.c.parent_id, t.selections.c.child_id).where(
                    t.selections.c.chat_id == chat_id
                )
            )
            selections = {p: c for p, c in chosen}
            return ChatTree(
                chat=chat,
                nodes=nodes,
                branches=tuple(_branches(conn, chat_id)),
                checkpoints=tuple(_checkpoints(conn, chat_id)),
                selections=selections,
            )

    def branches(self, chat_id: str) -> list[BranchSummary]:
        with self._read() as conn:
            chat = _chat_from_row(self._chat_row(conn, chat_id))
            branches = _branches(conn, chat_id)
            heads = {b.head_id for b in branches if b.head_id is not None}
            rows = {
                row["id"]: row
                for row in conn.execute(_node_select().where(t.nodes.c.id.in_(heads))).mappings()
            }
            # The shallowest tombstone (partial index): nothing above it needs a look, so a
            # chat without deleted messages lists every branch from its head row alone.
            shallowest = conn.execute(
                sa.select(sa.func.min(t.nodes.c.depth)).where(
                    t.nodes.c.chat_id == chat_id, t.nodes.c.deleted == sa.true()
                )
            ).scalar()
            result = []
            for branch in branches:
                active = branch.id == chat.active_branch_id
                row = rows.get(branch.head_id) if branch.head_id else None
                if row is None:
                    result.append(BranchSummary(branch, 0, None, active))
                    continue
                # A path's length is its live messages: the head's depth + 1, less tombstones.
                length: int = row["depth"] + 1
                last: Node | None = _node_from_row(row, row["text"])
                if shallowest is not None and row["depth"] >= shallowest:
                    length, last = self._below_tombstones(conn, chat_id, dict(row), shallowest)
                result.append(BranchSummary(branch, length, last, active))
            return result

    def _below_tombstones(
        self, conn: Connection, chat_id: str, head: Mapping[str, Any], shallowest: int
    ) -> tuple[int, Node | None]:
        """Length and last live message of a path that may cross tombstones.

        Walks up from the head only as far as the shallowest tombstone's parent.
        """
        walked = [
            (node_id, deleted)
            for node_id, _, deleted in _climb_marks(conn, chat_id, head["id"], shallowest - 1)
        ]
        gone = sum(1 for _, deleted in walked if deleted)
        last_id = next((node_id for node_id, deleted in walked if not deleted), None)
        last = None
        if last_id is not None:
            row = conn.execute(_node_select().where(t.nodes.c.id == last_id)).mappings().one()
            last = _node_from_row(row, row["text"])
        return head["depth"] + 1 - gone, last

    def checkpoints(self, chat_id: str) -> list[Checkpoint]:
        with self._read() as conn:
            self._chat_row(conn, chat_id)
            return _checkpoints(conn, chat_id)

    def revisions(self, chat_id: str, *, limit: int = 100) -> list[Revision]:
        with self._read() as conn:
            self._chat_row(conn, chat_id)
            rows = conn.execute(
                sa.select(t.revisions)
                .where(t.revisions.c.chat_id == chat_id)
                .order_by(t.revisions.c.number.desc())
                .limit(limit)
            ).mappings()
            return [_revision_from_row(r) for r in rows]

    def content_history(self, chat_id: str, node_id: str) -> list[ContentVersion]:
        with self._read() as conn:
            node = (
                conn.execute(
                    sa.select(t.nodes).where(t.nodes.c.id == node_id, t.nodes.c.chat_id == chat_id)
                )
                .mappings()
                .first()
            )
            if node is None:
                raise NotFound(f"no message {node_id} in this chat", field="node_id")
            logged = conn.execute(
                sa.select(
                    t.changes.c.revision, t.changes.c.field, t.changes.c.before, t.changes.c.after
                )
                .where(
                    t.changes.c.chat_id == chat_id,
                    t.changes.c.key == node_id,
                    t.changes.c.entity == "node",
                )
                .order_by(t.changes.c.revision, t.changes.c.seq)
            ).all()
            stamps = dict(
                conn.execute(
                    sa.select(t.revisions.c.number, t.revisions.c.created).where(
                        t.revisions.c.chat_id == chat_id
                    )
                ).all()
            )
            versions: list[tuple[int, str]] = []
            for revision, column, before, after in logged:
                if column == "*" and after["v"] is not None:
                    versions.append((revision, after["v"]["content_hash"]))
                elif column == "content_hash":
                    if not versions:  # imported node: its first text predates the log
                        versions.append((1, before["v"]))
                    versions.append((revision, after["v"]))
            if not versions:
                versions.append((node["revision"], node["content_hash"]))
            hashes = {h for _, h in versions}
            texts = dict(
                conn.execute(
                    sa.select(t.contents.c.hash, t.contents.c.text).where(
                        t.contents.c.hash.in_(hashes)
                    )
                ).all()
            )
        return [
            ContentVersion(node_id, revision, texts[h], _aware(stamps.get(revision)))
            for revision, h in versions
        ]

    # ---- documents

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
        now = _utc(self.clock())
        with self.engine.begin() as conn:
            current = None
            if id is not None:
                current = (
                    conn.execute(sa.select(t.documents).where(t.documents.c.id == id))
                    .mappings()
                    .first()
                )
            if current is None:
                row = {
                    "id": id or new_id(),
                    "owner": owner,
                    "kind": kind,
                    "name": name,
                    "data": dict(data),
                    "blob": None if blob is UNSET else blob,
                    "revision": 1,
                    "created": now,
                    "updated": now,
                }
                conn.execute(t.documents.insert(), row)
                return _document_from_row(row)
            if revision != current["revision"]:
                raise StaleRevision(
                    f"{kind} {name!r} is at revision {current['revision']}, not {revision}",
                    current_revision=current["revision"],
                    expected=revision,
                )
            values: dict[str, Any] = {
                "kind": kind,
                "name": name,
                "data": dict(data),
                "revision": current["revision"] + 1,
                "updated": now,
            }
            if blob is not UNSET:
                values["blob"] = blob
            done = conn.execute(
                t.documents.update()
                .where(t.documents.c.id == id, t.documents.c.revision == revision)
                .values(values)
            )
            if done.rowcount != 1:
                raise StaleRevision(
                    f"{kind} {name!r} changed meanwhile",
                    current_revision=current["revision"] + 1,
                    expected=revision,
                )
            stored = (
                conn.execute(sa.select(t.documents).where(t.documents.c.id == id)).mappings().one()
            )
            return _document_from_row(stored)

    def save_sent_prompt(self, chat_id: str, node_id: str, record: bytes) -> None:
        with self.engine.begin() as conn:
            found = conn.execute(
                sa.select(t.nodes.c.id).where(t.nodes.c.id == node_id, t.nodes.c.chat_id == chat_id)
            ).first()
            if found is None:
                raise NotFound(f"no message {node_id} in chat {chat_id}", field="node_id")
            conn.execute(t.sent_prompts.delete().where(t.sent_prompts.c.node_id == node_id))
            conn.execute(
                t.sent_prompts.insert().values(node_id=node_id, chat_id=chat_id, record=record)
            )

    def sent_prompt(self, chat_id: str, node_id: str) -> bytes | None:
        with self._read() as conn:
            found = conn.execute(
                sa.select(t.sent_prompts.c.record).where(
                    t.sent_prompts.c.node_id == node_id, t.sent_prompts.c.chat_id == chat_id
                )
            ).scalar()
        return bytes(found) if found is not None else None

    def get_document(self, id: str) -> Document:
        with self._read() as conn:
            row = (
                conn.execute(sa.select(t.documents).where(t.documents.c.id == id))
                .mappings()
                .first()
            )
        if row is None:
            raise NotFound(f"no document {id}", field="id")
        return _document_from_row(row)

    def find_documents(
        self, kind: str, *, name: str | None = None, owner: str = "", with_blobs: bool = False
    ) -> list[Document]:
        columns = [c for c in t.documents.c if with_blobs or c.name != "blob"]
        query = sa.select(*columns).where(t.documents.c.kind == kind, t.documents.c.owner == owner)
        if name is not None:
            query = query.where(t.documents.c.name == name)
        with self._read() as conn:
            rows = conn.execute(query.order_by(t.documents.c.created, t.documents.c.id)).mappings()
            return [_document_from_row(r, with_blobs) for r in rows]

    def delete_document(self, id: str, *, revision: int) -> None:
        with self.engine.begin() as conn:
            current = conn.execute(
                sa.select(t.documents.c.revision).where(t.documents.c.id == id)
            ).scalar()
            if current is None:
                raise NotFound(f"no document {id}", field="id")
            if current != revision:
                raise StaleRevision(
                    f"the document is at revision {current}, not {revision}",
                    current_revision=current,
                    expected=revision,
                )
            conn.execute(t.documents.delete().where(t.documents.c.id == id))

    def document_versions(
        self,
        kind: str | Sequence[str],
        *,
        owner: str = "",
        names: Sequence[str] | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[DocumentVersion]:
        query = sa.select(
            t.documents.c.id,
            t.documents.c.kind,
            t.documents.c.name,
            t.documents.c.revision,
            t.documents.c.updated,
        ).where(t.documents.c.owner == owner)
        kinds = [kind] if isinstance(kind, str) else sorted(set(kind))
        query = query.where(t.documents.c.kind.in_(kinds))
        if names is not None:
            if not names:
                return []
            query = query.where(t.documents.c.name.in_(sorted(set(names))))
        if ids is not None:
            if not ids:
                return []
            query = query.where(t.documents.c.id.in_(sorted(set(ids))))
        with self._read() as conn:
            rows = conn.execute(query.order_by(t.documents.c.created, t.documents.c.id)).all()
        return [DocumentVersion(r[0], r[1], r[2], r[3], _aware(r[4])) for r in rows]

    def versions_of(
        self,
        *,
        owner: str,
        kinds: Sequence[str] = (),
        ids: Sequence[str] = (),
        names: Mapping[str, Sequence[str]] | None = None,
    ) -> list[DocumentVersion]:
        d = t.documents.c
        wanted: list[Any] = []
        if kinds:
            wanted.append(d.kind.in_(sorted(set(kinds))))
        if ids:
            wanted.append(d.id.in_(sorted(set(ids))))
        for kind, chosen in (names or {}).items():
            if chosen:
                wanted.append(sa.and_(d.kind == kind, d.name.in_(sorted(set(chosen)))))
        if not wanted:
            return []
        query = (
            sa.select(d.id, d.kind, d.name, d.revision, d.updated)
            .where(d.owner == owner, sa.or_(*wanted))
            .order_by(d.created, d.id)
        )
        with self._read() as conn:
            rows = conn.execute(query).all()
        return [DocumentVersion(r[0], r[1], r[2], r[3], _aware(r[4])) for r in rows]

    # ---- what a turn reads

    def path_tail(
        self, chat_id: str, node_id: str, *, limit: int, counted: bool = True
    ) -> PathTail:
        with self._read() as conn:
            rows = conn.execute(
                sa.text(_TAIL_SQL),
                {"start": node_id, "chat": chat_id, "no": False, "limit": max(limit, 1)},
            ).all()
            if not rows:
                raise NotFound(f"no message {node_id} in this chat", field="node_id")
            before = hidden = 0
            first = rows[0]
            if counted and first[2]:  # messages above the tail: count them
                shallowest = _shallowest_tombstone(conn, chat_id)
                before = _live_above(conn, chat_id, first[0], first[8], shallowest)
                hidden = _hidden_above(conn, chat_id, first[0], first[8])
            # The state in force is the nearest one recorded, in the tail or above it.
            recorded = next((row[11] for row in reversed(rows) if row[11] is not None), None)
            if recorded is not None:
                state = ChatState.from_json(_raw_json(recorded))
            else:
                base = self._chat_row(conn, chat_id)["base_state"]
                state = _state_at(conn, chat_id, node_id, base)
        nodes = tuple(_node_from_raw(r, r[13]) for r in rows if not r[6])
        return PathTail(nodes, before, before - hidden, state)

    def user_messages_to(self, chat_id: str, node_id: str) -> int:
        with self._read() as conn:
            found = conn.execute(
                sa.text(
                    """
                    WITH RECURSIVE up(id, parent_id, role, deleted) AS (
                        SELECT id, parent_id, role, deleted FROM nodes
                        WHERE id = :start AND chat_id = :chat
                        UNION ALL
                        SELECT n.id, n.parent_id, n.role, n.deleted
                        FROM nodes n JOIN up ON n.id = up.parent_id
                    )
                    SELECT COUNT(*) FROM up WHERE role = 'user' AND deleted = :no
                    """
                ),
                {"start": node_id, "chat": chat_id, "no": False},
            ).scalar()
        return int(found or 0)

    def changed_nodes(self, chat_id: str, since: int) -> frozenset[str]:
        with self._read() as conn:
            rows = conn.execute(
                sa.text(
                    """
                    SELECT DISTINCT key FROM changes
                    WHERE chat_id = :chat AND entity = 'node' AND (
                        revision > :since OR revision IN (
                            SELECT target FROM revisions
                            WHERE chat_id = :chat AND number > :since AND target IS NOT NULL
                        )
                    )
                    """
                ),
                {"chat": chat_id, "since": since},
            ).scalars()
            return frozenset(rows)

    def get_nodes(self, chat_id: str, node_ids: Sequence[str]) -> list[Node]:
        out: list[Node] = []
        with self._read() as conn:
            ids = sorted(set(node_ids))
            for start in range(0, len(ids), 500):
                # By primary key alone: naming the chat in SQL would lead SQLite to walk the
                # chat's index instead, which costs the chat's length.
                query = _node_select().where(t.nodes.c.id.in_(ids[start : start + 500]))
                out.extend(
                    _node_from_row(r, r["text"])
                    for r in conn.execute(query).mappings()
                    if r["chat_id"] == chat_id
                )
        return out

    def token_counts(self, tokenizer: str, texts: Sequence[str]) -> dict[str, int]:
        by_hash = {content_hash(text): text for text in texts if text}
        found: dict[str, int] = {}
        keys = sorted(by_hash)
        with self._read() as conn:
            for start in range(0, len(keys), 500):
                rows = conn.execute(
                    sa.select(t.token_counts.c.hash, t.token_counts.c.count).where(
                        t.token_counts.c.tokenizer == tokenizer,
                        t.token_counts.c.hash.in_(keys[start : start + 500]),
                    )
                )
                found.update((by_hash[h], c) for h, c in rows)
        return found

    def save_token_counts(self, tokenizer: str, counts: Mapping[str, int]) -> None:
        by_hash = {content_hash(text): count for text, count in counts.items() if text}
        if not by_hash:
            return
        keys = sorted(by_hash)
        try:
            with self.engine.begin() as conn:
                for start in range(0, len(keys), 500):
                    chunk = keys[start : start + 500]
                    # Only texts the store holds get a count; one already counted stays.
                    stored = set(
                        conn.execute(
                            sa.select(t.contents.c.hash).where(t.contents.c.hash.in_(chunk))
                        ).scalars()
                    )
                    stored -= set(
                        conn.execute(
                            sa.select(t.token_counts.c.hash).where(
                                t.token_counts.c.tokenizer == tokenizer,
                                t.token_counts.c.hash.in_(chunk),
                            )
                        ).scalars()
                    )
                    if stored:
                        conn.execute(
                            t.token_counts.insert(),
                            [
                                {"hash": h, "tokenizer": tokenizer, "count": by_hash[h]}
                                for h in sorted(stored)
                            ],
                        )
        except sa.exc.IntegrityError:
            # Another process stored the same count, or the text went meanwhile: counts
            # are a memo, so losing one only means counting it again.
            pass


# A climb from a node (itself included) until `limit` live messages are found: the rows
# a turn reads, without the candidate counts a page shows.
_TAIL_SQL = f"""
    WITH RECURSIVE walk(id, parent_id, seen) AS (
        SELECT id, parent_id, CASE WHEN deleted = :no THEN 1 ELSE 0 END
        FROM nodes WHERE id = :start AND chat_id = :chat
        UNION ALL
        SELECT n.id, n.parent_id, w.seen + CASE WHEN n.deleted = :no THEN 1 ELSE 0 END
        FROM nodes n JOIN walk w ON n.id = w.parent_id
        WHERE w.seen < :limit
    )
    SELECT {_RAW_NODE_SQL}, c.text FROM walk w
    JOIN nodes n ON n.id = w.id
    JOIN contents c ON c.hash = n.content_hash
    ORDER BY n.depth
"""


def _bulk_insert(conn: Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert many rows straight through the driver's executemany.

    SQLAlchemy's per-value processing costs more than SQLite's own work for the
    hundreds of thousands of rows of a large import, so values are converted here,
    in the same stored form SQLAlchemy uses (JSON text, naive UTC timestamps on
    SQLite; JSONB and aware timestamps on PostgreSQL).
    """
    if not rows:
        return
    names = list(rows[0])
    columns = [table.c[name] for name in names]
    sqlite = conn.dialect.name == "sqlite"
    if sqlite:
        dump_json: Callable[[Any], Any] = json.dumps
    else:
        from psycopg.types.json import Jsonb

        dump_json = Jsonb

    def converter(column: sa.Column[Any]) -> Callable[[Any], Any] | None:
        if isinstance(column.type, sa.JSON):
            return lambda v: None if v is None else dump_json(v)
        if isinstance(column.type, sa.DateTime) and sqlite:
            return lambda v: _utc(v).replace(tzinfo=None).isoformat(" ", "microseconds")
        return None

    converters = [converter(c) for c in columns]
    marker = "?" if conn.dialect.paramstyle == "qmark" else "%s"
    quote = conn.dialect.identifier_preparer.quote
    sql = (
        f"INSERT INTO {quote(table.name)} ({', '.join(quote(n) for n in names)}) "
        f"VALUES ({', '.join([marker] * len(names))})"
    )
    pairs = list(zip(names, converters, strict=True))
    values = [
        tuple(row[name] if conv is None else conv(row[name]) for name, conv in pairs)
        for row in rows
    ]
    if not sqlite:
        # PostgreSQL: COPY streams the rows in one command, on the same transaction.
        raw = conn.connection.driver_connection
        assert raw is not None
        copy_sql = f"COPY {quote(table.name)} ({', '.join(quote(n) for n in names)}) FROM STDIN"
        with raw.cursor() as cursor, cursor.copy(copy_sql) as copy:
            for value in values:
                copy.write_row(value)
        return
    for start in range(0, len(values), 10000):
        conn.exec_driver_sql(sql, values[start : start + 10000])


def _history_hashes(
    conn: Connection, nodes_where: sa.ColumnElement[bool], changes_where: sa.ColumnElement[bool]
) -> set[str]:
    """Every text key in use: current message texts, edit history, undone messages."""
    used = set(
        conn.execute(sa.select(t.nodes.c.content_hash).where(nodes_where).distinct()).scalars()
    )
    # An insert's text is that of a live message (counted above) or of an earlier
    # version (an edit's `before`), except when the insert was undone: keep it for redo.
    gone = ~sa.exists().where(t.nodes.c.id == t.changes.c.key)
    logged = conn.execute(
        sa.select(t.changes.c.field, t.changes.c.before, t.changes.c.after).where(
            changes_where,
            t.changes.c.entity == "node",
            (t.changes.c.field == "content_hash") | ((t.changes.c.field == "*") & gone),
        )
    )
    for column, before, after in logged:
        if column == "content_hash":
            used.update(v for v in (before["v"], after["v"]) if v)
        elif after["v"] is not None:
            used.add(after["v"]["content_hash"])
    return used


def _insert_missing_contents(conn: Connection, texts: Mapping[str, str]) -> None:
    keys = list(texts)
    present: set[str] = set()
    sqlite = conn.dialect.name == "sqlite"
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        query = sa.select(t.contents.c.hash).where(t.contents.c.hash.in_(chunk))
        if not sqlite:
            # Held until commit, so a chat being deleted cannot take these texts away.
            query = query.with_for_update(key_share=True)
        present.update(conn.execute(query).scalars())
    _bulk_insert(
        conn, t.contents, [{"hash": k, "text": texts[k]} for k in keys if k not in present]
    )


# ------------------------------------------------------------------- opening


def _sqlite_engine(path: Path, durability: str) -> Engine:
    engine = sa.create_engine(f"sqlite:///{path}", connect_args={"timeout": 30})

    @sa.event.listens_for(engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        # Take transactions into our own hands so BEGIN IMMEDIATE can be issued:
        # a write then holds the lock from its first statement (no upgrade deadlock).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={'FULL' if durability == 'full' else 'NORMAL'}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        # A 100,000-message chat is ~100 MB: a page cache of 64 MB and memory-mapped
        # reads keep the path walk off the read() system call.
        cursor.execute("PRAGMA cache_size=-65536")
        cursor.execute("PRAGMA mmap_size=268435456")
        cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        reading = conn.get_execution_options().get("taverna_read", False)
        conn.exec_driver_sql("BEGIN" if reading else "BEGIN IMMEDIATE")

    return engine


def _postgres_engine(url: str, schema: str | None) -> Engine:
    args: dict[str, Any] = {}
    if schema:
        if not schema.replace("_", "").isalnum():
            raise TavernaError(f"bad schema name {schema!r}", field="schema")
        args["options"] = f"-c search_path={schema}"
        bootstrap = sa.create_engine(url)
        with bootstrap.begin() as conn:
            conn.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        bootstrap.dispose()
    return sa.create_engine(url, connect_args=args, pool_pre_ping=True)


def migrate(engine: Engine) -> None:
    """Bring the database schema to the newest migration (Alembic, run in-process)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            # Two processes opening a fresh database at once must not both create tables.
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(7305982146)")
        config.attributes["connection"] = conn
        command.upgrade(config, "head")


def open_store(
    target: str | Path,
    *,
    schema: str | None = None,
    durability: str = "full",
    clock: Callable[[], datetime] = _utcnow,
) -> SqlStore:
    """Open (and migrate) a store: a data folder or `.db` path for SQLite, or a database URL.

    `schema` places the tables in a PostgreSQL schema of that name (created if
    missing). `durability="normal"` lets SQLite skip the fsync on commit: still
    consistent after a crash of the process, but a power cut may lose the newest
    revisions.
    """
    text = str(target)
    if "://" in text:
        if text.startswith("sqlite"):
            path = Path(sa.engine.make_url(text).database or DB_FILE)
            engine = _sqlite_engine(path, durability)
        else:
            engine = _postgres_engine(text, schema)
        url = text
    else:
        path = Path(target)
        if path.suffix not in {".db", ".sqlite", ".sqlite3"}:
            path.mkdir(parents=True, exist_ok=True)
            path = path / DB_FILE
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
        engine = _sqlite_engine(path, durability)
        url = f"sqlite:///{path}"
    try:
        migrate(engine)
    except Exception:
        engine.dispose()
        raise
    return SqlStore(engine, url=url, clock=clock, schema=schema)


__all__ = ["SqlChatWriter", "SqlStore", "content_hash", "migrate", "open_store"]
