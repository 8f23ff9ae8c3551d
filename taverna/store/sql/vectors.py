"""Stored embeddings: each message's vector per model, and other texts' by hash.

The vectors are plain float32 bytes in an ordinary table on both databases, the record.
Where the database has a nearest-neighbour search (sqlite-vec, pgvector: see
`vector_index`), every write indexes them too and recall asks the database; without one
(or with `vector_search_off`), recall searches a chat's vectors held in memory (see
`taverna.services.memory.recall`), reading only the rows written since it last looked.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence

import numpy as np
import sqlalchemy as sa

from taverna.store import schema as t
from taverna.store.repository import DueMessage, NearMessage, StoredSigns, StoredVector
from taverna.store.sql import vector_index
from taverna.store.sql.base import SqlBase

log = logging.getLogger(__name__)

_CHUNK = 500
# Built once: a warm search runs it every turn.
_AT_SEQS = sa.select(t.message_vectors.c.seq, t.message_vectors.c.vector).where(
    t.message_vectors.c.seq.in_(sa.bindparam("seqs", expanding=True))
)


def sign_bits(vector: bytes) -> bytes:
    """A float32 vector's sign bits, packed: bit i (most significant first) set when
    component i is above zero; 64 bytes for 512 floats."""
    return np.packbits(np.frombuffer(vector, dtype=np.float32) > 0).tobytes()


class SqlVectors(SqlBase):
    """Message and text vectors."""

    vector_search_off: bool = False  # set by `open_store(vector_search=False)`
    _search: tuple[str, str] | None = None  # (kind, pgvector's schema), found on first use

    def _search_kind(self) -> tuple[str, str]:
        if self._search is None:
            found = ("", "") if self.vector_search_off else vector_index.detect(self.engine)
            if not found[0] and not self.vector_search_off:
                log.warning(
                    "the database has no vector search (%s): recall searches in the process",
                    "sqlite-vec not loaded"
                    if self.engine.dialect.name == "sqlite"
                    else "pgvector not available",
                )
            self._search = found
        return self._search

    def vector_search(self) -> str:
        return self._search_kind()[0]

    def nearest_messages(
        self, chat_id: str, model: str, query: bytes, *, below_depth: int, shortlist: int
    ) -> tuple[list[NearMessage], bool] | None:
        kind, schema = self._search_kind()
        if not kind:
            return None

        def nearest(conn: sa.Connection) -> tuple[list[NearMessage], bool]:
            return vector_index.nearest(
                conn,
                kind,
                schema,
                chat_id,
                model,
                query,
                below_depth=below_depth,
                shortlist=shortlist,
            )

        with self._read() as conn:
            # One read for the usual case: the index is up to date.
            if not vector_index.behind(conn, model):
                return nearest(conn)
        # Rows written without the index (another process, say): take them in first.
        with self.engine.begin() as conn:
            vector_index.sync(conn, kind, schema, model)
        with self._read() as conn:
            return nearest(conn)

    def node_vectors(self, model: str, node_ids: Sequence[str]) -> dict[str, bytes]:
        v = t.message_vectors
        found: dict[str, bytes] = {}
        ids = sorted(set(node_ids))
        with self._read() as conn:
            for start in range(0, len(ids), _CHUNK):
                rows = conn.execute(
                    sa.select(v.c.node_id, v.c.vector).where(
                        v.c.model == model, v.c.node_id.in_(ids[start : start + _CHUNK])
                    )
                )
                found.update((i, bytes(b)) for i, b in rows)
        return found

    def messages_due(
        self,
        model: str,
        *,
        limit: int,
        owners: Collection[str] | None = None,
        written: tuple[str, int] | None = None,
    ) -> list[DueMessage]:
        n, v, c = t.nodes, t.message_vectors, t.contents
        query = (
            sa.select(n.c.chat_id, n.c.id, n.c.content_hash, n.c.role, n.c.speaker, c.c.text)
            .select_from(
                n.join(c, c.c.hash == n.c.content_hash).outerjoin(
                    v,
                    sa.and_(
                        v.c.node_id == n.c.id,
                        v.c.model == model,
                        v.c.content_hash == n.c.content_hash,
                    ),
                )
            )
            .where(v.c.seq.is_(None), n.c.deleted == sa.false(), c.c.text != "")
            # No order: the first `limit` found will do, and the search stops there.
            .limit(limit)
        )
        if owners is not None:
            if not owners:
                return []
            owned = sa.select(t.chats.c.id).where(t.chats.c.owner.in_(sorted(set(owners))))
            query = query.where(n.c.chat_id.in_(owned))
        if written is not None:
            # On `ix_nodes_revision`: a long chat's last write, not the whole chat.
            query = query.where(n.c.chat_id == written[0], n.c.revision > written[1])
        with self._read() as conn:
            return [DueMessage(*row) for row in conn.execute(query)]

    def fill_signs(self, *, limit: int) -> int:
        v = t.message_vectors
        # The partial index `ix_message_vectors_unsigned` holds just these rows: finding
        # them reads nothing once every row has its bits.
        with self.engine.begin() as conn:
            rows = conn.execute(
                sa.select(v.c.seq, v.c.vector).where(v.c.signs.is_(None)).limit(limit)
            ).all()
            if rows:
                conn.execute(
                    v.update()
                    .where(v.c.seq == sa.bindparam("at"), v.c.signs.is_(None))
                    .values(signs=sa.bindparam("bits")),
                    [{"at": int(seq), "bits": sign_bits(bytes(vector))} for seq, vector in rows],
                )
        return len(rows)

    def save_message_vectors(self, model: str, rows: Sequence[tuple[DueMessage, bytes]]) -> int:
        if not rows:
            return 0
        try:
            with self.engine.begin() as conn:
                return self._put_vectors(conn, model, rows)
        except sa.exc.IntegrityError:
            pass
        # A message went meanwhile (its chat deleted, say): store the others one by one.
        stored = 0
        for row in rows:
            try:
                with self.engine.begin() as conn:
                    stored += self._put_vectors(conn, model, [row])
            except sa.exc.IntegrityError:
                continue
        return stored

    def _put_vectors(
        self, conn: sa.Connection, model: str, rows: Sequence[tuple[DueMessage, bytes]]
    ) -> int:
        v = t.message_vectors
        kind, schema = self._search_kind()
        ids = [due.node_id for due, _ in rows]
        for start in range(0, len(ids), _CHUNK):
            gone = conn.execute(
                v.delete()
                .where(v.c.model == model, v.c.node_id.in_(ids[start : start + _CHUNK]))
                .returning(v.c.seq)
            )
            vector_index.forget(conn, kind, list(gone.scalars()))
        conn.execute(
            v.insert(),
            [
                {
                    "chat_id": due.chat_id,
                    "node_id": due.node_id,
                    "model": model,
                    "content_hash": due.content_hash,
                    "vector": vector,
                    "signs": sign_bits(vector),
                }
                for due, vector in rows
            ],
        )
        if kind:
            vector_index.sync(conn, kind, schema, model)
        return len(rows)

    def message_vectors(
        self, chat_id: str, model: str, *, after: int = 0, limit: int | None = None
    ) -> list[StoredVector]:
        v, n = t.message_vectors, t.nodes
        query = (
            sa.select(v.c.seq, v.c.node_id, n.c.depth, v.c.vector)
            .select_from(v.join(n, n.c.id == v.c.node_id))
            .where(v.c.chat_id == chat_id, v.c.model == model, v.c.seq > after)
            .order_by(v.c.seq)
            .limit(limit)
        )
        with self._read() as conn:
            return [StoredVector(int(s), i, int(d), bytes(b)) for s, i, d, b in conn.execute(query)]

    def message_signs(
        self, chat_id: str, model: str, *, after: int = 0, limit: int | None = None
    ) -> list[StoredSigns]:
        v, n = t.message_vectors, t.nodes
        # The floats only where a row has no bits yet (written before they were stored).
        floats = sa.case((v.c.signs.is_(None), v.c.vector), else_=sa.null())
        query = (
            sa.select(v.c.seq, v.c.node_id, n.c.depth, v.c.signs, floats)
            .select_from(v.join(n, n.c.id == v.c.node_id))
            .where(v.c.chat_id == chat_id, v.c.model == model, v.c.seq > after)
            .order_by(v.c.seq)
            .limit(limit)
        )
        with self._read() as conn:
            return [
                StoredSigns(int(s), i, int(d), bytes(b) if b is not None else sign_bits(bytes(f)))
                for s, i, d, b, f in conn.execute(query)
            ]

    def vectors_at(self, seqs: Sequence[int]) -> dict[int, bytes]:
        keys = sorted({int(s) for s in seqs})
        found: dict[int, bytes] = {}
        with self._read() as conn:
            for start in range(0, len(keys), _CHUNK):
                rows = conn.execute(_AT_SEQS, {"seqs": keys[start : start + _CHUNK]})
                found.update((int(s), bytes(b)) for s, b in rows)
        return found

    def climb(self, chat_id: str, start: str, *, limit: int) -> list[tuple[str, int]]:
        sql = sa.text(
            """
            WITH RECURSIVE up(id, parent_id, depth, steps) AS (
                SELECT id, parent_id, depth, 1 FROM nodes WHERE id = :start AND chat_id = :chat
                UNION ALL
                SELECT n.id, n.parent_id, n.depth, up.steps + 1
                FROM nodes n JOIN up ON n.id = up.parent_id
                WHERE up.steps < :limit
            )
            SELECT id, depth FROM up ORDER BY depth DESC
            """
        )
        with self._read() as conn:
            rows = conn.execute(sql, {"start": start, "chat": chat_id, "limit": limit})
            return [(i, int(d)) for i, d in rows]

    def text_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]:
        tv = t.text_vectors
        keys = sorted(set(hashes))
        found: dict[str, bytes] = {}
        with self._read() as conn:
            for start in range(0, len(keys), _CHUNK):
                rows = conn.execute(
                    sa.select(tv.c.hash, tv.c.vector).where(
                        tv.c.model == model, tv.c.hash.in_(keys[start : start + _CHUNK])
                    )
                )
                found.update((h, bytes(b)) for h, b in rows)
        return found

    def save_text_vectors(self, model: str, vectors: Mapping[str, bytes]) -> None:
        if not vectors:
            return
        tv = t.text_vectors
        try:
            with self.engine.begin() as conn:
                have = set(self._have_texts(conn, model, list(vectors)))
                rows = [
                    {"model": model, "hash": h, "vector": b}
                    for h, b in sorted(vectors.items())
                    if h not in have
                ]
                if rows:
                    conn.execute(tv.insert(), rows)
        except sa.exc.IntegrityError:
            # Another process stored the same text's vector: they are equal.
            pass

    def _have_texts(self, conn: sa.Connection, model: str, hashes: list[str]) -> list[str]:
        tv = t.text_vectors
        out: list[str] = []
        for start in range(0, len(hashes), _CHUNK):
            out.extend(
                conn.execute(
                    sa.select(tv.c.hash).where(
                        tv.c.model == model, tv.c.hash.in_(hashes[start : start + _CHUNK])
                    )
                ).scalars()
            )
        return out
