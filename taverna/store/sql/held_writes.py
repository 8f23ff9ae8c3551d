"""A chat write's statements that need no answer, held and sent together.

A unit of work on a chat (`SqlChatWriter`) inserts its message, the choice above it, the
branch's head, the chat's row, the revision and its change log: writes whose results it
never reads. They are held until the next statement that reads (or needs an answer) or
until the commit, then sent. On PostgreSQL the held writes go as one statement, each a
data-modifying WITH query of it, so a turn's write costs three round trips (the claim of
the chat, the text, the rest) instead of nine. Elsewhere (SQLite runs in the process, a
statement costs no round trip) they run one by one, in the order they were made.

PostgreSQL runs a statement's WITH queries on one snapshot and in no set order: two
writes of one row must never share a statement, so a second write of a row held sends
those held first. The foreign keys are checked once the whole statement has run, so a
message and the choice that points to it may go together.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, CursorResult
from sqlalchemy.sql.expression import Executable


@dataclass(frozen=True, slots=True)
class HeldWrite:
    """One held write: its statement with its parameters as it runs alone, and the same
    write described for a combined statement (the table, INSERT's rows, or the WHERE
    columns and the values an UPDATE sets; a DELETE sets none)."""

    statement: Executable
    params: Mapping[str, Any] | Sequence[Mapping[str, Any]]
    table: sa.Table
    rows: tuple[Mapping[str, Any], ...] = ()
    where: Mapping[str, Any] | None = None
    values: Mapping[str, Any] | None = None

    def shape(self) -> Hashable:
        """What the combined statement's text depends on (not the values)."""
        if self.rows:
            return (self.table.name, "insert", tuple(self.rows[0]), len(self.rows))
        assert self.where is not None
        verb = "update" if self.values else "delete"
        return (self.table.name, verb, tuple(self.where), tuple(self.values or ()))


# The combined statements, by the shapes of their writes (a turn's write has a few shapes).
_COMBINED: dict[tuple[Hashable, ...], sa.Select[Any]] = {}
_COMBINED_MOST = 256


class HeldWrites:
    """The connection of a unit of work: `hold` keeps a write back, `execute` sends what is
    held before it runs anything, `flush` sends it (at the latest before the commit)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.combine = conn.dialect.name == "postgresql"
        self._held: list[HeldWrite] = []
        self._rows: set[Hashable] = set()  # the rows the held writes touch

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)

    def execute(self, statement: Any, *args: Any, **kwargs: Any) -> CursorResult[Any]:
        self.flush()
        return self.conn.execute(statement, *args, **kwargs)

    def hold(self, write: HeldWrite, row: Hashable) -> None:
        """Keep `write` (of `row`) back until the next read or the commit."""
        if row in self._rows:
            self.flush()
        self._held.append(write)
        self._rows.add(row)

    def flush(self) -> None:
        """Send the held writes."""
        if not self._held:
            return
        held, self._held = self._held, []
        self._rows.clear()
        if not self.combine or len(held) == 1:
            for write in held:
                self.conn.execute(write.statement, write.params)
            return
        statement = _combined(held)
        params: dict[str, Any] = {}
        for number, write in enumerate(held):
            if write.rows:
                for index, row in enumerate(write.rows):
                    params.update({f"w{number}_{index}_{k}": v for k, v in row.items()})
                continue
            assert write.where is not None
            params.update({f"w{number}_k_{k}": v for k, v in write.where.items()})
            params.update({f"w{number}_v_{k}": v for k, v in (write.values or {}).items()})
        self.conn.execute(statement, params)


def _combined(held: list[HeldWrite]) -> sa.Select[Any]:
    """One statement running every held write, each a WITH query of it."""
    key = tuple(write.shape() for write in held)
    found = _COMBINED.get(key)
    if found is not None:
        return found
    parts = [_part(number, write) for number, write in enumerate(held)]
    statement: sa.Select[Any] = sa.select(sa.literal_column("1")).add_cte(*parts)
    if len(_COMBINED) >= _COMBINED_MOST:
        _COMBINED.clear()
    _COMBINED[key] = statement
    return statement


def _part(number: int, write: HeldWrite) -> sa.CTE:
    table = write.table

    def bind(name: str, column: str) -> sa.BindParameter[Any]:
        return sa.bindparam(name, type_=table.c[column].type)

    if write.rows:
        rows = [
            {k: bind(f"w{number}_{index}_{k}", k) for k in row}
            for index, row in enumerate(write.rows)
        ]
        return table.insert().values(rows).cte(f"w{number}")
    assert write.where is not None
    match = [table.c[k] == bind(f"w{number}_k_{k}", k) for k in write.where]
    if write.values:
        sets = {k: bind(f"w{number}_v_{k}", k) for k in write.values}
        return table.update().where(*match).values(sets).cte(f"w{number}")
    return table.delete().where(*match).cte(f"w{number}")
