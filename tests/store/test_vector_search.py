"""The database's own nearest-neighbour search over message vectors: sqlite-vec in the
embedded SQLite, pgvector on PostgreSQL where the server has it; none when turned off
(recall then searches in the process), and rows written without the index are taken in
before the next search."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa

from taverna.model.chat import Node, NodeRole, new_id
from taverna.store import NewChat
from taverna.store.repository import DueMessage
from taverna.store.sql import SqlStore, open_store
from taverna.store.testing import DATABASE_URL_ENV, backends, temporary_store

MODEL = "test-model"
DIMS = 64


def pgvector_installed() -> bool:
    url = os.environ.get(DATABASE_URL_ENV)
    if not url:
        return False
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            found = conn.exec_driver_sql(
                "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
            ).scalar()
    finally:
        engine.dispose()
    return bool(found)


@pytest.fixture(params=backends())
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStore]:
    if request.param == "postgresql" and not pgvector_installed():
        pytest.skip("pgvector is not installed on this PostgreSQL server")
    with temporary_store(request.param, tmp_path) as opened:
        yield opened


@pytest.fixture(params=backends())
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStore]:
    """A store with or without the database's vector search."""
    with temporary_store(request.param, tmp_path) as opened:
        yield opened


def _chat(store: SqlStore, count: int) -> tuple[str, list[Node]]:
    nodes: list[Node] = []
    parent: str | None = None
    for i in range(count):
        node = Node(new_id(), "", parent, NodeRole.USER, f"message {i}")
        nodes.append(node)
        parent = node.id
    chat = store.import_tree(NewChat(title="vectors"), nodes, active_leaf_id=parent)
    return chat.id, nodes


def _unit(rows: np.ndarray) -> np.ndarray:
    out: np.ndarray = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    return out


def _save(store: SqlStore, chat_id: str, vectors: np.ndarray, start: int = 0) -> None:
    """Store `vectors` as the vectors of messages `start`, `start + 1`, ..."""
    due = store.messages_due(MODEL, limit=100_000)
    by_text = {d.text: d for d in due if d.chat_id == chat_id}
    rows: list[tuple[DueMessage, bytes]] = [
        (by_text[f"message {start + i}"], vectors[i].tobytes()) for i in range(len(vectors))
    ]
    store.save_message_vectors(MODEL, rows)


def test_the_store_searches_with_its_databases_extension(store: SqlStore) -> None:
    expected = "sqlite-vec" if store.engine.dialect.name == "sqlite" else "pgvector"
    assert store.vector_search() == expected


def test_the_nearest_messages_above_a_depth_scored_exactly(store: SqlStore) -> None:
    rng = np.random.default_rng(1)
    topics = rng.standard_normal((20, DIMS))
    vectors = _unit(topics[rng.integers(0, 20, 600)] + 0.7 * rng.standard_normal((600, DIMS)))
    chat_id, nodes = _chat(store, 600)
    _save(store, chat_id, vectors)
    other_id, _ = _chat(store, 50)  # another chat's vectors are never found
    _save(store, other_id, vectors[:50])
    for q in range(8):
        query = _unit((vectors[q * 31] + 0.05 * rng.standard_normal(DIMS))[None, :])[0]
        found = store.nearest_messages(
            chat_id, MODEL, query.tobytes(), below_depth=500, shortlist=64
        )
        assert found is not None
        near, complete = found
        assert not complete and len(near) == 64
        ids = {n.id: i for i, n in enumerate(nodes)}
        assert all(h.node_id in ids and h.depth < 500 for h in near)
        assert all(ids[h.node_id] == h.depth for h in near)
        scores = [h.score for h in near]
        assert scores == sorted(scores, reverse=True)
        exact = vectors[:500] @ query
        assert np.allclose(scores, [exact[ids[h.node_id]] for h in near], atol=1e-5)
        # The search's best ten are an exact search's (sqlite-vec shortlists by sign bits).
        best = set(np.argsort(-exact)[:10].tolist())
        assert len(best & {ids[h.node_id] for h in near[:10]}) >= 9


def test_a_short_chat_is_all_found_and_said_so(store: SqlStore) -> None:
    chat_id, nodes = _chat(store, 12)
    vectors = _unit(np.random.default_rng(2).standard_normal((12, DIMS)))
    _save(store, chat_id, vectors)
    found = store.nearest_messages(
        chat_id, MODEL, vectors[3].tobytes(), below_depth=12, shortlist=64
    )
    assert found is not None
    near, complete = found
    assert complete and len(near) == 12
    assert near[0].node_id == nodes[3].id and near[0].score == pytest.approx(1.0, abs=1e-5)


def test_a_replaced_vector_is_found_by_its_new_value_only(store: SqlStore) -> None:
    chat_id, nodes = _chat(store, 10)
    vectors = _unit(np.random.default_rng(3).standard_normal((10, DIMS)))
    _save(store, chat_id, vectors)
    fresh = _unit(np.random.default_rng(4).standard_normal((1, DIMS)))[0]
    due = DueMessage(chat_id, nodes[2].id, "another text's hash", "user", "", "message 2")
    store.save_message_vectors(MODEL, [(due, fresh.tobytes())])
    near, _ = store.nearest_messages(
        chat_id, MODEL, fresh.tobytes(), below_depth=10, shortlist=64
    ) or ([], True)
    assert [h.node_id for h in near].count(nodes[2].id) == 1
    assert near[0].node_id == nodes[2].id and near[0].score == pytest.approx(1.0, abs=1e-5)


def test_the_stored_sign_bits_are_the_floats_signs(any_store: SqlStore) -> None:
    """Bits stored with each vector equal bits made from its floats; rows stored before
    the bits were (NULL) have theirs made from the floats when read."""
    store = any_store
    chat_id, _ = _chat(store, 40)
    vectors = _unit(np.random.default_rng(5).standard_normal((40, DIMS)))
    vectors[7, :5] = 0.0  # zero is not above zero
    _save(store, chat_id, vectors)
    mv = sa.table("message_vectors", sa.column("seq"), sa.column("signs"))
    stored = store.message_vectors(chat_id, MODEL)
    with store.engine.begin() as conn:  # as if written before the bits were stored
        conn.execute(
            mv.update().where(mv.c.seq.in_([v.seq for v in stored[::3]])).values(signs=None)
        )
    signs = store.message_signs(chat_id, MODEL)
    assert [(s.seq, s.node_id, s.depth) for s in signs] == [
        (v.seq, v.node_id, v.depth) for v in stored
    ]
    for s, v in zip(signs, stored, strict=True):
        floats = np.frombuffer(v.vector, dtype=np.float32)
        assert s.signs == np.packbits(floats > 0).tobytes()
        assert len(s.signs) == DIMS // 8
    after = store.message_signs(chat_id, MODEL, after=signs[9].seq, limit=5)
    assert after == signs[10:15]


def test_a_deleted_chats_vectors_leave_the_search(store: SqlStore) -> None:
    chat_id, _ = _chat(store, 10)
    vectors = _unit(np.random.default_rng(5).standard_normal((10, DIMS)))
    _save(store, chat_id, vectors)
    store.delete_chat(chat_id, revision=store.get_chat(chat_id).revision)
    store.purge_deleted()
    found = store.nearest_messages(
        chat_id, MODEL, vectors[0].tobytes(), below_depth=10, shortlist=8
    )
    assert found == ([], True)
    if store.engine.dialect.name == "sqlite":
        from taverna.store.sql.vector_index import knn_table

        with store.engine.connect() as conn:
            left = conn.exec_driver_sql(f"SELECT count(*) FROM {knn_table(MODEL)}").scalar()
        assert left == 0


def test_turned_off_the_store_has_no_search(tmp_path: Path) -> None:
    for backend in backends():
        with temporary_store(backend, tmp_path / backend, vector_search=False) as store:
            assert store.vector_search() == ""
            chat_id, _ = _chat(store, 3)
            assert (
                store.nearest_messages(chat_id, MODEL, b"\0" * 4 * DIMS, below_depth=3, shortlist=4)
                is None
            )


def test_vectors_written_without_the_index_are_taken_in_before_a_search(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    plain = open_store(folder, durability="normal", vector_search=False)
    chat_id, nodes = _chat(plain, 20)
    vectors = _unit(np.random.default_rng(6).standard_normal((20, DIMS)))
    _save(plain, chat_id, vectors[:10])
    plain.close()
    indexed = open_store(folder, durability="normal")
    _save(indexed, chat_id, vectors[10:12], start=10)  # indexed with what came before
    plain = open_store(folder, durability="normal", vector_search=False)
    _save(plain, chat_id, vectors[12:], start=12)
    plain.close()
    for i in (0, 11, 19):
        near, _ = indexed.nearest_messages(
            chat_id, MODEL, vectors[i].tobytes(), below_depth=20, shortlist=4
        ) or ([], True)
        assert near and near[0].node_id == nodes[i].id
    indexed.close()


def _unsigned(store: SqlStore) -> int:
    with store.engine.connect() as conn:
        found = conn.exec_driver_sql(
            "SELECT count(*) FROM message_vectors WHERE signs IS NULL"
        ).scalar()
    return int(found or 0)


def test_vectors_stored_without_sign_bits_are_given_them(any_store: SqlStore) -> None:
    """Rows written before the bits were stored (NULL) get them a batch at a time, equal
    to bits made from their floats; rows that had them are left alone."""
    store = any_store
    chat_id, _ = _chat(store, 30)
    vectors = _unit(np.random.default_rng(7).standard_normal((30, DIMS)))
    _save(store, chat_id, vectors)
    stored = store.message_vectors(chat_id, MODEL)
    mv = sa.table("message_vectors", sa.column("seq"), sa.column("signs"))
    with store.engine.begin() as conn:  # as if written before the bits were stored
        conn.execute(
            mv.update().where(mv.c.seq.in_([v.seq for v in stored[::2]])).values(signs=None)
        )
    assert _unsigned(store) == 15
    assert store.fill_signs(limit=10) == 10
    assert _unsigned(store) == 5
    assert store.fill_signs(limit=10) == 5
    assert store.fill_signs(limit=10) == 0
    with store.engine.connect() as conn:
        rows = dict(conn.exec_driver_sql("SELECT seq, signs FROM message_vectors").all())
    for v in stored:
        floats = np.frombuffer(v.vector, dtype=np.float32)
        assert bytes(rows[v.seq]) == np.packbits(floats > 0).tobytes()


def test_the_vectors_without_sign_bits_are_found_by_their_own_index(tmp_path: Path) -> None:
    """Once every row has its bits, looking for one without reads no table row."""
    with temporary_store("sqlite", tmp_path) as store:
        with store.engine.connect() as conn:
            plan = " ".join(
                str(row[-1])
                for row in conn.exec_driver_sql(
                    "EXPLAIN QUERY PLAN SELECT seq, vector FROM message_vectors"
                    " WHERE signs IS NULL LIMIT 500"
                )
            )
        assert "ix_message_vectors_unsigned" in plan, plan


def test_the_messages_due_of_some_accounts_only(any_store: SqlStore) -> None:
    store = any_store

    def chat(owner: str) -> str:
        node = Node(new_id(), "", None, NodeRole.USER, f"{owner}'s message")
        new = NewChat(title=owner, owner=owner)
        return store.import_tree(new, [node], active_leaf_id=node.id).id

    mine, theirs, local = chat("a1"), chat("b2"), chat("")

    def due(owners: list[str] | None) -> set[str]:
        return {d.chat_id for d in store.messages_due(MODEL, limit=10, owners=owners)}

    assert due(None) == {mine, theirs, local}
    assert due(["a1"]) == {mine}
    assert due(["", "b2"]) == {theirs, local}
    assert due([]) == set()


def test_the_messages_a_write_added_are_found_on_their_own_index(tmp_path: Path) -> None:
    """Only what a chat's writes after a revision added or changed, read through
    `ix_nodes_revision`: a long chat's last write, not the whole chat."""
    with temporary_store("sqlite", tmp_path) as store:
        chat_id, nodes = _chat(store, 50)
        chat = store.get_chat(chat_id)
        with store.write(chat_id, revision=chat.revision, label="append") as w:
            node = w.insert_node(nodes[-1].id, NodeRole.USER, "the newest")
            w.set_selection(nodes[-1].id, node.id)
            w.set_active(node.id)
        due = store.messages_due(MODEL, limit=10, written=(chat_id, chat.revision))
        assert [d.node_id for d in due] == [node.id]
        assert len(store.messages_due(MODEL, limit=100, written=(chat_id, -1))) == 51
        statements: list[tuple[str, object]] = []

        def seen(_c: object, _cur: object, sql: str, params: object, *_: object) -> None:
            statements.append((sql, params))

        sa.event.listen(store.engine, "before_cursor_execute", seen)
        store.messages_due(MODEL, limit=10, written=(chat_id, chat.revision))
        sa.event.remove(store.engine, "before_cursor_execute", seen)
        sql, params = next((s, p) for s, p in statements if "nodes" in s)
        with store.engine.connect() as conn:
            plan = " ".join(
                str(row[-1])
                for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", params)  # type: ignore[arg-type]
            )
        assert "ix_nodes_revision" in plan, plan
