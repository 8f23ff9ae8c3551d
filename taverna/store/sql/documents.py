"""Documents (cards, presets, lorebooks...): stored by kind and name, written by revision.

PostgreSQL's `jsonb` keeps an object's keys in an order of its own, and SillyTavern's
files come back byte for byte only in their own order: there a document is stored as
its JSON text (a `jsonb` string), read back in the order it was written. Rows written
before as objects are still read.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from taverna.errors import NotFound, StaleRevision
from taverna.model.chat import new_id
from taverna.store import schema as t
from taverna.store.repository import UNSET, Document, DocumentVersion
from taverna.store.sql.base import SqlBase
from taverna.store.sql.rows import _aware, _document_from_row, _utc


def _find_statement(*, named: bool, with_blobs: bool) -> sa.Select[Any]:
    columns = [c for c in t.documents.c if with_blobs or c.name != "blob"]
    d = t.documents.c
    query = sa.select(*columns).where(
        d.kind == sa.bindparam("kind"), d.owner == sa.bindparam("owner")
    )
    if named:
        query = query.where(d.name == sa.bindparam("name"))
    return query.order_by(d.created, d.id)


# Built once: settings, connections and regex scripts are looked up several times a
# turn, and building a statement costs more than running it.
_FIND = {
    (named, blobs): _find_statement(named=named, with_blobs=blobs)
    for named in (False, True)
    for blobs in (False, True)
}
_GET = sa.select(t.documents).where(t.documents.c.id == sa.bindparam("id"))


@functools.lru_cache(maxsize=32)
def _versions_statement(kinds: bool, ids: bool, named: int) -> sa.Select[Any]:
    """`versions_of`'s query for one shape of request, its values bound when it runs (a
    turn asks for the versions of the documents it reads, each turn in the same shape)."""
    d = t.documents.c
    columns = (d.id, d.kind, d.name, d.revision, d.updated, d.created)
    owner: sa.BindParameter[str] = sa.bindparam("owner")
    # One query of index lookups, a part each: as one WHERE of ORs, a library whose
    # documents share one owner would be read whole.
    parts: list[sa.Select[Any]] = []
    if kinds:
        parts.append(
            sa.select(*columns).where(
                d.owner == owner, d.kind.in_(sa.bindparam("kinds", expanding=True))
            )
        )
    if ids:
        parts.append(
            sa.select(*columns).where(
                d.id.in_(sa.bindparam("ids", expanding=True)), d.owner == owner
            )
        )
    for i in range(named):
        parts.append(
            sa.select(*columns).where(
                d.owner == owner,
                d.kind == sa.bindparam(f"kind_{i}"),
                d.name.in_(sa.bindparam(f"names_{i}", expanding=True)),
            )
        )
    found = sa.union(*parts).subquery() if len(parts) > 1 else parts[0].subquery()
    return sa.select(
        found.c.id, found.c.kind, found.c.name, found.c.revision, found.c.updated
    ).order_by(found.c.created, found.c.id)


# Documents no turn reads (which process generates in a chat, and its heartbeat): their
# writes, every few seconds, leave what is kept of the library as it is.
QUIET_KINDS = frozenset({"generation_lease", "generation_worker"})


class SqlDocuments(SqlBase):
    """The document library."""

    def _stored(self, data: Mapping[str, Any]) -> Any:
        """The value of the `data` column: the object, or on PostgreSQL its JSON text."""
        if self.engine.dialect.name == "postgresql":
            return json.dumps(dict(data), ensure_ascii=False)
        return dict(data)

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
        stored = self._put_document(
            kind, name, data, blob=blob, id=id, revision=revision, owner=owner
        )
        if kind not in QUIET_KINDS:
            self._documents_changed()  # committed: what is kept of the library is read again
        return stored

    def _put_document(
        self,
        kind: str,
        name: str,
        data: Mapping[str, Any],
        *,
        blob: bytes | None,
        id: str | None,
        revision: int | None,
        owner: str,
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
                    "data": self._stored(data),
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
                "data": self._stored(data),
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

    def get_document(self, id: str) -> Document:
        with self._read() as conn:
            row = conn.execute(_GET, {"id": id}).mappings().first()
        if row is None:
            raise NotFound(
                f"no document {id}", field="id", code="no_document", params={"id": str(id)}
            )
        return _document_from_row(row)

    def find_documents(
        self, kind: str, *, name: str | None = None, owner: str = "", with_blobs: bool = False
    ) -> list[Document]:
        query = _FIND[name is not None, with_blobs]
        values = {"kind": kind, "owner": owner}
        if name is not None:
            values["name"] = name
        with self._read() as conn:
            rows = conn.execute(query, values).mappings()
            return [_document_from_row(r, with_blobs) for r in rows]

    def delete_document(self, id: str, *, revision: int) -> None:
        with self.engine.begin() as conn:
            current = conn.execute(
                sa.select(t.documents.c.revision).where(t.documents.c.id == id)
            ).scalar()
            if current is None:
                raise NotFound(
                    f"no document {id}", field="id", code="no_document", params={"id": str(id)}
                )
            if current != revision:
                raise StaleRevision(
                    f"the document is at revision {current}, not {revision}",
                    current_revision=current,
                    expected=revision,
                )
            conn.execute(t.documents.delete().where(t.documents.c.id == id))
        self._documents_changed()

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
        named = [(kind, sorted(set(chosen))) for kind, chosen in (names or {}).items() if chosen]
        if not kinds and not ids and not named:
            return []
        query = _versions_statement(bool(kinds), bool(ids), len(named))
        values: dict[str, Any] = {"owner": owner}
        if kinds:
            values["kinds"] = sorted(set(kinds))
        if ids:
            values["ids"] = sorted(set(ids))
        for i, (kind, chosen) in enumerate(named):
            values[f"kind_{i}"] = kind
            values[f"names_{i}"] = chosen
        with self._read() as conn:
            rows = conn.execute(query, values).all()
        return [DocumentVersion(r[0], r[1], r[2], r[3], _aware(r[4])) for r in rows]
