"""The database's own nearest-neighbour search over message vectors.

- **SQLite with sqlite-vec**: one `vec0` table a model (`knn_<hash of the model>`),
  partitioned by chat, holding each vector's sign bits (`bit[dims]`: a 32nd of the
  floats) with the message's depth as a metadata column. A search asks it for the
  nearest rows by Hamming distance above a depth (a shortlist), then scores those rows
  exactly from their float vectors in `message_vectors`. sqlite-vec scans a partition
  with no index: the bits of a 100,000-message chat are 6 MB, read in a few
  milliseconds; its float scan (no SIMD in the published build) took ten times longer.
- **PostgreSQL with pgvector**: `message_vectors.embedding`, a `vector` column added
  when the extension can be created, searched exactly by inner product (`<#>`).

`message_vectors` stays the record; the index is derived from it. `vector_indexes`
holds, per model, the highest `seq` indexed: rows written past it (by a process that
could not load the extension, say) are indexed before the next search. A vector
replaced or purged leaves the index too; a row the index still names but the record
lost is skipped by the search's join.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from taverna.store import schema as t
from taverna.store.repository import NearMessage

SQLITE_VEC = "sqlite-vec"
PGVECTOR = "pgvector"
_SYNC_CHUNK = 2000
_IN_CHUNK = 500
# Built once: a search runs it every turn.
_RECORDS = sa.select(
    t.message_vectors.c.seq, t.message_vectors.c.node_id, t.message_vectors.c.vector
).where(t.message_vectors.c.seq.in_(sa.bindparam("seqs", expanding=True)))


def knn_table(model: str) -> str:
    """The vec0 table of one model's vectors (a name safe whatever the model is called)."""
    return "knn_" + hashlib.sha256(model.encode()).hexdigest()[:16]


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def detect(engine: Engine) -> tuple[str, str]:
    """Which search the database has, and (PostgreSQL) the schema pgvector lives in.

    On PostgreSQL the extension is created when it can be, and `message_vectors` gets its
    `embedding` column; without it (not installed, not allowed) there is none."""
    if engine.dialect.name == "sqlite":
        try:
            with engine.connect().execution_options(taverna_read=True) as conn:
                conn.exec_driver_sql("SELECT vec_version()").scalar()
        except sa.exc.DBAPIError:
            return "", ""
        return SQLITE_VEC, ""
    with engine.begin() as conn:
        conn.exec_driver_sql("SELECT pg_advisory_xact_lock(7305982147)")
        try:
            with conn.begin_nested():
                # Database-wide, so in `public`: a store's own schema may be dropped.
                conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
        except sa.exc.DBAPIError:
            pass  # not installed or not allowed: it may still exist (created by another)
        where = conn.exec_driver_sql(
            "SELECT n.nspname FROM pg_extension e"
            " JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
        ).scalar()
        if where is None:
            return "", ""
        has_column = conn.exec_driver_sql(
            "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()"
            " AND table_name = 'message_vectors' AND column_name = 'embedding'"
        ).scalar()
        if not has_column:
            conn.exec_driver_sql(
                f"ALTER TABLE message_vectors ADD COLUMN embedding {_quoted(where)}.vector"
            )
        return PGVECTOR, str(where)


def _pg_vector_text(vector: bytes) -> str:
    """pgvector's text form of float32 bytes (each float written to round-trip exactly)."""
    values = np.frombuffer(vector, dtype=np.float32).tolist()
    return "[" + ",".join(repr(v) for v in values) + "]"


def _synced(conn: Connection, model: str) -> tuple[int, int]:
    row = conn.execute(
        sa.select(t.vector_indexes.c.synced_seq, t.vector_indexes.c.dims).where(
            t.vector_indexes.c.model == model
        )
    ).first()
    return (int(row[0]), int(row[1])) if row else (-1, 0)


def behind(conn: Connection, model: str) -> bool:
    """Whether the model's record holds rows the index has not taken in yet (a look along
    the key past the last row indexed: nothing to read when there are none)."""
    synced, _ = _synced(conn, model)
    mv = t.message_vectors
    late = conn.execute(
        sa.select(mv.c.seq).where(mv.c.seq > synced, mv.c.model == model).limit(1)
    ).first()
    return late is not None


def sync(conn: Connection, kind: str, schema: str, model: str) -> None:
    """Index the model's rows written since the index last took any in (in `conn`'s
    write transaction)."""
    synced, dims = _synced(conn, model)
    mv, n = t.message_vectors, t.nodes
    start = max(synced, 0)
    while True:
        rows = conn.execute(
            sa.select(mv.c.seq, mv.c.chat_id, n.c.depth, mv.c.vector)
            .select_from(mv.join(n, n.c.id == mv.c.node_id))
            .where(mv.c.model == model, mv.c.seq > start)
            .order_by(mv.c.seq)
            .limit(_SYNC_CHUNK)
        ).all()
        if not rows:
            break
        if not dims:
            dims = len(rows[0][3]) // 4
            if kind == SQLITE_VEC and dims % 8 == 0:
                conn.exec_driver_sql(
                    f"CREATE VIRTUAL TABLE IF NOT EXISTS {knn_table(model)} USING vec0("
                    f"chat_id text partition key, embedding bit[{dims}], depth integer)"
                )
        fitting = [r for r in rows if len(r[3]) == dims * 4]
        if kind == SQLITE_VEC and dims % 8 == 0 and fitting:
            conn.execute(
                sa.text(
                    f"INSERT INTO {knn_table(model)}(rowid, chat_id, embedding, depth)"
                    " VALUES (:seq, :chat, vec_quantize_binary(:vector), :depth)"
                ),
                [{"seq": s, "chat": c, "vector": bytes(v), "depth": d} for s, c, d, v in fitting],
            )
        elif kind == PGVECTOR and fitting:
            conn.execute(
                sa.text(
                    f"UPDATE message_vectors SET embedding = CAST(:vector AS {_quoted(schema)}.vector)"
                    " WHERE seq = :seq"
                ),
                [{"seq": s, "vector": _pg_vector_text(bytes(v))} for s, _, _, v in fitting],
            )
        start = int(rows[-1][0])
    if start > synced or synced < 0:
        values = {"synced_seq": start, "dims": dims}
        if synced < 0:
            conn.execute(t.vector_indexes.insert().values(model=model, **values))
        else:
            conn.execute(
                t.vector_indexes.update().where(t.vector_indexes.c.model == model).values(**values)
            )


def forget(conn: Connection, kind: str, seqs: Sequence[int]) -> None:
    """Take rows out of every model's vec0 table (their record is replaced or purged)."""
    if kind != SQLITE_VEC or not seqs:
        return
    models = conn.execute(sa.select(t.vector_indexes.c.model)).scalars().all()
    for model in models:
        table = knn_table(model)
        exists = conn.exec_driver_sql(
            "SELECT 1 FROM sqlite_master WHERE name = ?", (table,)
        ).scalar()
        if not exists:
            continue
        for start in range(0, len(seqs), _IN_CHUNK):
            chunk = [int(s) for s in seqs[start : start + _IN_CHUNK]]
            marks = ",".join("?" * len(chunk))
            conn.exec_driver_sql(f"DELETE FROM {table} WHERE rowid IN ({marks})", tuple(chunk))


def nearest(
    conn: Connection,
    kind: str,
    schema: str,
    chat_id: str,
    model: str,
    query: bytes,
    *,
    below_depth: int,
    shortlist: int,
) -> tuple[list[NearMessage], bool]:
    """The shortlist nearest `query` above `below_depth`, scored exactly, best first, and
    whether the index had no more rows to offer."""
    if below_depth <= 0 or shortlist <= 0:
        return [], True
    if kind == PGVECTOR:
        vector_type = f"{_quoted(schema)}.vector"
        operator = f"OPERATOR({_quoted(schema)}.<#>)"
        rows = conn.execute(
            sa.text(
                "SELECT mv.node_id, n.depth,"
                f" -(mv.embedding {operator} CAST(:q AS {vector_type})) AS score"
                " FROM message_vectors mv JOIN nodes n ON n.id = mv.node_id"
                " WHERE mv.chat_id = :chat AND mv.model = :model AND n.depth < :below"
                " AND mv.embedding IS NOT NULL"
                f" ORDER BY mv.embedding {operator} CAST(:q AS {vector_type}), mv.seq"
                " LIMIT :k"
            ),
            {
                "q": _pg_vector_text(query),
                "chat": chat_id,
                "model": model,
                "below": below_depth,
                "k": shortlist,
            },
        ).all()
        hits = [NearMessage(i, int(d), float(s)) for i, d, s in rows]
        return hits, len(rows) < shortlist
    table = knn_table(model)
    try:
        found = conn.execute(
            sa.text(
                f"SELECT rowid, depth FROM {table} WHERE embedding MATCH vec_quantize_binary(:q)"
                " AND k = :k AND chat_id = :chat AND depth < :below"
            ),
            {"q": query, "k": shortlist, "chat": chat_id, "below": below_depth},
        ).all()
    except sa.exc.OperationalError as exc:
        if "no such table" in str(exc):  # nothing of this model indexed yet
            return [], True
        raise
    depths = {int(s): int(d) for s, d in found}
    if not depths:
        return [], True
    records: list[Any] = []
    seqs = sorted(depths)
    for start in range(0, len(seqs), _IN_CHUNK):
        records.extend(conn.execute(_RECORDS, {"seqs": seqs[start : start + _IN_CHUNK]}).all())
    q = np.frombuffer(query, dtype=np.float32)
    if records:
        matrix = np.vstack([np.frombuffer(bytes(v), dtype=np.float32) for _, _, v in records])
        scores = matrix @ q if matrix.shape[1] == q.shape[0] else np.zeros(len(records))
    else:
        scores = np.zeros(0)
    hits = [
        NearMessage(node_id, depths[int(seq)], float(scores[i]))
        for i, (seq, node_id, _) in enumerate(records)
    ]
    # Exact scores, best first; ties by the order the messages were embedded.
    order = sorted(range(len(hits)), key=lambda i: (-hits[i].score, int(records[i][0])))
    return [hits[i] for i in order], len(found) < shortlist
