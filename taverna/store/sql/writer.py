"""The unit of work on one chat: its reads and writes, each logged (`ChangeLog`) so that
undo and redo replay them."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from taverna.errors import NotFound
from taverna.model.chat import (
    Branch,
    CharacterRef,
    Chat,
    ChatState,
    Checkpoint,
    GenerationInfo,
    Node,
    NodeRole,
    RevisionKind,
    new_id,
)
from taverna.store import schema as t
from taverna.store.repository import UNSET, ChatWriter
from taverna.store.sql.base import refuse_write, revision_in_range
from taverna.store.sql.change_log import ChangeLog
from taverna.store.sql.contents import _put_content
from taverna.store.sql.held_writes import HeldWrite, HeldWrites
from taverna.store.sql.rows import (
    _chars_json,
    _chat_from_row,
    _node_from_row,
    _row_from_json,
    _row_json,
    _to_json_value,
    _utc,
)
from taverna.store.sql.tree import _branches, _checkpoints, _children, _path_to
from taverna.store.sql.write_statements import (
    BRANCH_HEAD,
    CLAIM,
    DELETE_SELECTION,
    DESCEND,
    INSERT_NODE,
    INSERT_SELECTION,
    NODE,
    NODE_ROW,
    PLACE,
    REFRESH_STATE_FROM,
    SELECTION,
    UPDATE_BRANCH,
    UPDATE_NODE,
    UPDATE_SELECTION,
)


class SqlChatWriter(ChangeLog, ChatWriter):
    """A unit of work on one chat inside one SQL transaction."""

    @classmethod
    def claim(
        cls, conn: Connection, chat_id: str, revision: int, label: str, now: datetime
    ) -> SqlChatWriter:
        """Move the live chat from `revision` to the next and write it (first statement
        of the transaction); NotFound or StaleRevision if it is not at `revision`."""
        if revision_in_range(revision):
            row = (
                conn.execute(
                    CLAIM,
                    {
                        "revision": revision + 1,
                        "updated": now,
                        "claim_id": chat_id,
                        "claim_revision": revision,
                    },
                )
                .mappings()
                .first()
            )
            if row is not None:
                return cls(conn, row, revision + 1, label, now)
        refuse_write(conn, chat_id, revision, ": reload and retry")

    @classmethod
    def resume(
        cls, conn: Connection, kept: Mapping[str, Any], revision: int, label: str, now: datetime
    ) -> SqlChatWriter:
        """A write that starts from what the last write of this process left (`kept_row`),
        with no statement: the chat's row moves on at the end, if it is still at `revision`
        (SQLite only: its write lock is held from the transaction's start, so nothing can
        change the chat meanwhile; PostgreSQL takes the row's lock first, with the claim)."""
        writer = cls(
            conn, {**kept, "revision": revision + 1, "updated": now}, revision + 1, label, now
        )
        writer.resumed_from = revision
        return writer

    def __init__(
        self,
        conn: Connection,
        claimed: Mapping[Any, Any],
        revision: int,
        label: str,
        now: datetime,
    ) -> None:
        # Writes whose results are never read are held and sent together (`held_writes`);
        # every other statement sends them first.
        self.held = HeldWrites(conn)
        self.conn = cast(Connection, self.held)
        self.chat_id = claimed["id"]
        self.revision = revision
        self.label = label
        self.now = now
        self.kind = RevisionKind.OPERATION
        self.target: int | None = None
        self._chat_row = {column.name: claimed[column.name] for column in t.chats.c}
        self._chat: Chat | None = None  # the row as a Chat, until the row changes
        # What this write knows of the rows it reads, kept as it writes them: branch heads,
        # choices (by parent key), and the place (depth, state_from) of each message it read
        # or wrote (a reply reads its parent's place for its state, then to go under it).
        self._redo_pending = bool(claimed["redo_pending"])
        leaf = self._chat_row["active_leaf_id"]
        self._branch_heads: dict[str, str | None] = {}
        if self._chat_row["active_branch_id"]:
            self._branch_heads[self._chat_row["active_branch_id"]] = claimed["branch_head"]
        self._choices: dict[str, str | None] = {leaf or "": claimed["leaf_choice"]}
        self._places: dict[str, tuple[int, str | None]] = {}
        if leaf and claimed["leaf_depth"] is not None:
            self._places[leaf] = (claimed["leaf_depth"], claimed["leaf_state_from"])
        self._changes: list[dict[str, Any]] = []
        self._chat_dirty: dict[str, Any] = {}
        self._history_texts: set[str] = set()  # texts the change log now keeps
        self.resumed_from: int | None = None  # see `resume`

    def kept_row(self) -> dict[str, Any] | None:
        """The chat's row after this write with what a claim reads beside it, for the next
        write of this process to `resume` from; None unless all of it is known (an undo or
        a redo leaves redo pending or not: the next write claims)."""
        if self.kind is not RevisionKind.OPERATION:
            return None
        leaf, active = self._chat_row["active_leaf_id"], self._chat_row["active_branch_id"]
        place = self._places.get(leaf) if leaf else (None, None)
        if place is None or (leaf or "") not in self._choices:
            return None
        if active and active not in self._branch_heads:
            return None
        return {
            **self._chat_row,
            "branch_head": self._branch_heads[active] if active else None,
            "redo_pending": False,  # an operation ends what could be redone
            "leaf_depth": place[0],
            "leaf_state_from": place[1],
            "leaf_choice": self._choices[leaf or ""],
        }

    # ---- reads

    @property
    def chat(self) -> Chat:
        if self._chat is None:
            self._chat = _chat_from_row(self._chat_row)
        return self._chat

    def _node_row(self, node_id: str) -> Mapping[Any, Any]:
        row = (
            self.conn.execute(NODE_ROW, {"node_key": node_id, "chat_key": self.chat_id})
            .mappings()
            .first()
        )
        if row is None:
            raise _no_message(node_id)
        return row

    def _place(self, node_id: str) -> tuple[int, str | None]:
        """A node's depth and `state_from`."""
        place = self._places.get(node_id)
        if place is None:
            self._read_place(node_id)
            place = self._places[node_id]
        return place

    def _read_place(self, node_id: str) -> Mapping[str, Any] | None:
        """Read a node's place (noted) and the state in force at it (returned)."""
        row = self.conn.execute(PLACE, {"node_key": node_id, "chat_key": self.chat_id}).first()
        if row is None:
            raise _no_message(node_id)
        depth, source, state = row
        self._places[node_id] = (depth, source)
        found: Mapping[str, Any] | None = state if source else self._chat_row["base_state"]
        return found

    def get_node(self, node_id: str) -> Node:
        row = (
            self.conn.execute(NODE, {"node_key": node_id, "chat_key": self.chat_id})
            .mappings()
            .first()
        )
        if row is None:
            raise _no_message(node_id)
        return _node_from_row(row, row["text"])

    def children(self, parent_id: str | None, *, include_deleted: bool = False) -> list[Node]:
        return _children(self.conn, self.chat_id, parent_id, include_deleted)

    def path_to(self, node_id: str) -> list[Node]:
        return _path_to(self.conn, self.chat_id, node_id)

    def active_nodes(self) -> list[Node]:
        leaf = self._chat_row["active_leaf_id"]
        return _path_to(self.conn, self.chat_id, leaf) if leaf else []

    def state_at(self, node_id: str | None) -> ChatState:
        place = self._places.get(node_id) if node_id is not None else (0, None)
        if node_id is None or (place is not None and place[1] is None):
            return ChatState.from_json(self._chat_row["base_state"] or {})  # nothing recorded
        return ChatState.from_json(self._read_place(node_id) or {})

    def selection(self, parent_id: str | None) -> str | None:
        key = parent_id or ""
        if key not in self._choices:
            self._choices[key] = self.conn.execute(
                SELECTION, {"chat_key": self.chat_id, "parent_key": key}
            ).scalar()
        return self._choices[key]

    def selections(self) -> dict[str, str]:
        rows = self.conn.execute(
            sa.select(t.selections.c.parent_id, t.selections.c.child_id).where(
                t.selections.c.chat_id == self.chat_id
            )
        )
        return {parent: child for parent, child in rows}

    def descend(self, node_id: str) -> str:
        # Follow the remembered choices down, stopping at a deleted child.
        found = self.conn.execute(DESCEND, {"start": node_id, "chat": self.chat_id, "no": False})
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
            parent_depth, inherited = self._place(parent_id)
            depth = parent_depth + 1
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
        self.held.hold(HeldWrite(INSERT_NODE, row, t.nodes, rows=(row,)), ("node", node_id))
        self._places[node_id] = (depth, node_id if state is not None else inherited)
        self._choices.setdefault(node_id, None)  # a new message has no choice below it
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
        if "content_hash" in changed:
            self._history_texts.update((row["content_hash"], changed["content_hash"]))
        for column, value in changed.items():
            self._set_node_field(node_id, column, value)
            self._log("node", node_id, column, row[column], value)
        return self.get_node(node_id)

    def _set_node_field(self, node_id: str, column: str, value: Any) -> None:
        self.conn.execute(
            UPDATE_NODE, {column: value, "revision": self.revision, "node_key": node_id}
        )
        if column == "state":
            self._places.clear()  # `state_from` moves below this node
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
        self.conn.execute(
            REFRESH_STATE_FROM, {"source": source, "node": node_id, "chat": self.chat_id}
        )

    def set_selection(self, parent_id: str | None, child_id: str | None) -> None:
        before = self.selection(parent_id)
        if before == child_id:
            return
        self._apply_selection(parent_id or "", child_id, exists=before is not None)
        self._log("selection", parent_id or "", "child_id", before, child_id)

    def _apply_selection(
        self, parent_key: str, child_id: str | None, *, exists: bool | None = None
    ) -> None:
        """Set or remove the choice at `parent_key`; `exists`: whether it has a row (None:
        not known, an update is tried first)."""
        self._choices[parent_key] = child_id
        key = {"chat_key": self.chat_id, "parent_key": parent_key}
        where = {"chat_id": self.chat_id, "parent_id": parent_key}
        if child_id is None:
            write = HeldWrite(DELETE_SELECTION, key, t.selections, where=where)
            self.held.hold(write, ("selection", parent_key))
            return
        if exists is not False:
            done = self.conn.execute(UPDATE_SELECTION, {**key, "child_id": child_id})
            if done.rowcount:
                return
        row = {**where, "child_id": child_id}
        write = HeldWrite(INSERT_SELECTION, row, t.selections, rows=(row,))
        self.held.hold(write, ("selection", parent_key))

    def _set_chat(self, column: str, value: Any) -> None:
        before = self._chat_row[column]
        if before == value:
            return
        self._chat_row[column] = value
        self._chat_dirty[column] = value
        self._chat = None
        self._log("chat", self.chat_id, column, _to_json_value(column, before), value)

    def set_active(self, leaf_id: str | None, *, branch_id: str | None = UNSET) -> None:
        if branch_id is not UNSET:
            self._set_chat("active_branch_id", branch_id)
        self._set_chat("active_leaf_id", leaf_id)
        active = self._chat_row["active_branch_id"]
        if active:
            if active in self._branch_heads:
                before = self._branch_heads[active]
            else:
                before = self.conn.execute(BRANCH_HEAD, {"branch_key": active}).scalar()
            if before != leaf_id:
                params = {"branch_key": active, "head_id": leaf_id}
                where, values = {"id": active}, {"head_id": leaf_id}
                write = HeldWrite(UPDATE_BRANCH, params, t.branches, where=where, values=values)
                self.held.hold(write, ("branch", active))
                self._log("branch", active, "head_id", before, leaf_id)
            self._branch_heads[active] = leaf_id

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
            raise NotFound(
                f"no such {kind}",
                field=f"{kind}_id",
                code="no_such_entity",
                params={"kind": str(kind)},
            )
        self._replace_row(table, key, None)
        self._log(kind, key, "*", before, None)

    def _entity_row(self, table: sa.Table, key: str) -> dict[str, Any] | None:
        row = self.conn.execute(sa.select(table).where(table.c.id == key)).mappings().first()
        return _row_json(row) if row is not None else None

    def _replace_row(self, table: sa.Table, key: str, row: Mapping[Any, Any] | None) -> None:
        if table is t.branches:
            self._branch_heads.pop(key, None)
        self.conn.execute(table.delete().where(table.c.id == key))
        if row is not None:
            self.conn.execute(table.insert(), _row_from_json(row))


def _no_message(node_id: str) -> NotFound:
    return NotFound(
        f"no message {node_id} in this chat",
        field="node_id",
        code="no_message_in_this_chat",
        params={"node_id": str(node_id)},
    )
