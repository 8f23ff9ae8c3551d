"""A chat revision's change log: recorded as a unit of work writes, replayed by undo and redo.

Every change a write makes is logged with its old and new value; at commit the log is
stored with the revision. Undo sets the old values of the newest revision not yet
undone, last change first; redo sets the new values again, first change first. Both
are revisions of their own, so nothing is lost.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from taverna.errors import NotFound, TavernaError
from taverna.model.chat import Chat, Revision, RevisionKind
from taverna.store import schema as t
from taverna.store.sql.base import update_live_chat
from taverna.store.sql.held_writes import HeldWrite, HeldWrites
from taverna.store.sql.rows import _from_json_value, _revision_from_row, _row_from_json
from taverna.store.sql.write_statements import (
    END_REDO,
    INSERT_CHANGES,
    INSERT_NODE,
    INSERT_REVISION,
    UPDATE_BRANCH,
    UPDATE_CHAT,
)


class ChangeLog(ABC):
    """The change log of one unit of work on a chat (`SqlChatWriter` writes through it)."""

    conn: Connection
    held: HeldWrites
    chat_id: str
    revision: int
    label: str
    now: datetime
    kind: RevisionKind
    target: int | None
    _changes: list[dict[str, Any]]
    _chat_row: dict[str, Any]
    _chat_dirty: dict[str, Any]
    _chat: Chat | None
    _redo_pending: bool
    _places: dict[str, tuple[int, str | None]]
    _branch_heads: dict[str, str | None]
    _history_texts: set[str]  # texts the change log now keeps
    resumed_from: int | None  # the revision a write resumed from (not claimed)

    @abstractmethod
    def _set_node_field(self, node_id: str, column: str, value: Any) -> None:
        """Write one column of a node."""

    @abstractmethod
    def _apply_selection(
        self, parent_key: str, child_id: str | None, *, exists: bool | None = None
    ) -> None:
        """Set or remove the choice at `parent_key`."""

    @abstractmethod
    def _replace_row(self, table: sa.Table, key: str, row: Mapping[Any, Any] | None) -> None:
        """Put `row` in place of the branch or checkpoint `key` (None: remove it)."""

    def _log(self, entity: str, key: str, field: str, before: Any, after: Any) -> None:
        """Record one change: the value before it (for undo) and after it (for redo)."""
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

    def undo(self) -> Revision:
        number = self.conn.execute(
            sa.select(sa.func.max(t.revisions.c.number)).where(
                t.revisions.c.chat_id == self.chat_id,
                t.revisions.c.kind == RevisionKind.OPERATION.value,
                t.revisions.c.undone == sa.false(),
            )
        ).scalar()
        if number is None:
            raise NotFound("nothing to undo", field="revision", code="nothing_to_undo")
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
            raise NotFound("nothing to redo", field="revision", code="nothing_to_redo")
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
                # A message an undo takes away keeps its text for a redo.
                for row in (change["before"]["v"], change["after"]["v"]):
                    if row is not None:
                        self._history_texts.add(row["content_hash"])
                self._places.clear()
                self.conn.execute(t.nodes.delete().where(t.nodes.c.id == key))
                if value is not None:
                    self.conn.execute(INSERT_NODE, _row_from_json(value))
            else:
                self._set_node_field(key, column, value)
        elif entity == "chat":
            value = _from_json_value(column, value)
            self._chat_row[column] = value
            self._chat_dirty[column] = value
            self._chat = None
        elif entity == "selection":
            self._apply_selection(key, value)
        elif entity == "branch":
            if column == "*":
                self._replace_row(t.branches, key, value)
            else:
                self._branch_heads.pop(key, None)
                self.conn.execute(UPDATE_BRANCH, {"branch_key": key, column: value})
        elif entity == "checkpoint":
            self._replace_row(t.checkpoints, key, value)
        else:  # pragma: no cover - the log only holds the kinds above
            raise TavernaError(
                f"unknown change kind {entity!r}",
                code="unknown_change_kind",
                params={"entity": str(entity)},
            )

    def finish(self) -> None:
        """Write the chat row, the revision and its change log (inside the transaction):
        with the writes held before them, one statement on PostgreSQL."""
        held = self.held
        if self._history_texts:
            _keep_history_texts(self.conn, self.chat_id, self._history_texts)
        chat = {"chat_key": self.chat_id}
        if self.resumed_from is not None:
            # Not claimed at the start: the row moves on now, if no one moved it since.
            moved = {**self._chat_dirty, "revision": self.revision, "updated": self.now}
            held.flush()
            update_live_chat(
                self.conn, self.chat_id, self.resumed_from, moved, hint=": reload and retry"
            )
        elif self._chat_dirty:
            dirty = dict(self._chat_dirty)
            write = HeldWrite(
                UPDATE_CHAT, {**dirty, **chat}, t.chats, where={"id": self.chat_id}, values=dirty
            )
            held.hold(write, ("chat", self.chat_id))
        if self.kind is RevisionKind.OPERATION and self._redo_pending:
            # A new operation ends what could be redone (git-like: no branching history).
            where = {"chat_id": self.chat_id, "undone": True, "redoable": True}
            write = HeldWrite(END_REDO, chat, t.revisions, where=where, values={"redoable": False})
            held.hold(write, ("redo", self.chat_id))
        revision = {
            "chat_id": self.chat_id,
            "number": self.revision,
            "kind": self.kind.value,
            "label": self.label,
            "created": self.now,
            "target": self.target,
            "undone": False,
            "redoable": True,
        }
        held.hold(
            HeldWrite(INSERT_REVISION, revision, t.revisions, rows=(revision,)),
            ("revision", self.revision),
        )
        if self._changes:
            changes = tuple(self._changes)
            held.hold(
                HeldWrite(INSERT_CHANGES, list(changes), t.changes, rows=changes),
                ("changes", self.revision),
            )
        held.flush()


def _keep_history_texts(conn: Connection, chat_id: str, hashes: set[str]) -> None:
    """Note that a chat's history keeps these texts (each pair once)."""
    keys = sorted(hashes)
    table = t.history_texts
    present = set(
        conn.execute(
            sa.select(table.c.hash).where(table.c.chat_id == chat_id, table.c.hash.in_(keys))
        ).scalars()
    )
    missing = [{"hash": h, "chat_id": chat_id} for h in keys if h not in present]
    if missing:
        conn.execute(table.insert(), missing)
