"""PostgreSQL's two searches answer alike: the same chat recalled through pgvector and
through the exact search in the process (the store opened without the extension's use)
gives the same messages in the same order with the same scores, for turns on either
branch and windows of every size. Needs TAVERNA_TEST_DATABASE_URL and pgvector on that
server (`.ci/install-pgvector`)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from taverna.model.chat import Node, NodeRole, new_id
from taverna.services.memory.recall import RecallConfig, RecallService, recall_config
from taverna.store import NewChat
from taverna.store.sql import SqlStore, open_store
from taverna.store.testing import DATABASE_URL_ENV, temporary_store

pytestmark = pytest.mark.postgres

MODEL = "searches-model"
DIMS = 64


class NoModel:
    """Every message of the query is stored with its vector: the model is never asked."""

    model = MODEL

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise AssertionError(f"asked to embed {list(texts)}")


@dataclass
class Stores:
    indexed: SqlStore  # pgvector's search
    exact: SqlStore  # the same schema, searched in the process


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[Stores]:
    if not os.environ.get(DATABASE_URL_ENV, "").startswith("postgresql"):
        pytest.skip(f"needs {DATABASE_URL_ENV} (PostgreSQL)")
    with temporary_store("postgresql", tmp_path) as indexed:
        if indexed.vector_search() != "pgvector":
            reason = "pgvector is not installed on this PostgreSQL server"
            (pytest.fail if os.environ.get("CI") else pytest.skip)(reason)
        exact = open_store(
            os.environ[DATABASE_URL_ENV], schema=_schema_of(indexed), vector_search=False
        )
        try:
            yield Stores(indexed, exact)
        finally:
            exact.close()


def _schema_of(store: SqlStore) -> str:
    with store.engine.connect() as conn:
        return str(conn.exec_driver_sql("SELECT current_schema()").scalar())


def _unit(rows: np.ndarray) -> np.ndarray:
    out: np.ndarray = (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)
    return out


def _build(store: SqlStore) -> tuple[str, str, str]:
    """A chat of 500 messages on its active path and a sibling branch of 300 from depth
    100, whose messages are all near the topic the path's last messages are about; on the
    path a few messages near it too, some hidden. The chat, and both leaves."""
    rng = np.random.default_rng(11)
    topics = _unit(rng.standard_normal((12, DIMS)))
    target = topics[0]
    nodes: list[Node] = []
    vectors: dict[str, np.ndarray] = {}

    def add(parent: str | None, text: str, vector: np.ndarray, hidden: bool = False) -> str:
        role = NodeRole.USER if len(nodes) % 2 == 0 else NodeRole.ASSISTANT
        node = Node(new_id(), "", parent, role, text, hidden=hidden)
        nodes.append(node)
        vectors[node.id] = _unit(vector)
        return node.id

    parent: str | None = None
    fork = ""
    for depth in range(500):
        if depth % 37 == 5:  # near the topic; every other such one hidden
            vector = target + 0.5 * rng.standard_normal(DIMS)
            parent = add(parent, f"near {depth}", vector, hidden=depth % 2 == 0)
        elif depth >= 498:  # the turn's own messages: about the topic
            parent = add(parent, f"asking {depth}", target + 0.2 * rng.standard_normal(DIMS))
        else:
            topic = topics[1 + depth % 11]
            parent = add(parent, f"path {depth}", topic + 0.6 * rng.standard_normal(DIMS))
        if depth == 99:
            fork = parent
    main_leaf = parent
    parent = fork
    for i in range(300):
        vector = target + 0.4 * rng.standard_normal(DIMS)
        parent = add(parent, f"sibling {i}", vector)
    side_leaf = parent
    assert main_leaf is not None and side_leaf is not None
    chat = store.import_tree(NewChat(title="two searches"), nodes, active_leaf_id=main_leaf)
    due = {d.node_id: d for d in store.messages_due(MODEL, limit=10_000)}
    store.save_message_vectors(MODEL, [(due[i], v.tobytes()) for i, v in vectors.items()])
    return chat.id, main_leaf, side_leaf


def _recall(
    store: SqlStore, config: RecallConfig, chat_id: str, leaf: str, below: int
) -> list[tuple[str, float]]:
    service = RecallService(store, lambda config: NoModel(), bits="never")  # type: ignore[arg-type,return-value]
    recent = store.path_tail(chat_id, leaf, limit=4).nodes
    turn = service.for_turn(config, chat_id, leaf, recent)
    assert turn is not None
    return [(m.id, m.score) for m in turn.for_window(below).messages]


def test_pgvector_and_the_exact_search_recall_the_same(stores: Stores) -> None:
    chat_id, main_leaf, side_leaf = _build(stores.indexed)
    config = recall_config(
        {
            "extension_settings": {
                "vectors": {"enabled_chats": True, "query": 2, "insert": 4, "score_threshold": 0}
            }
        }
    )
    main_path = {n.id for n in stores.indexed.path_to(chat_id, main_leaf)}
    hidden = {n.id for n in stores.indexed.path_to(chat_id, main_leaf) if n.hidden}
    side_path = {n.id for n in stores.indexed.path_to(chat_id, side_leaf)}
    for leaf, path, belows in [
        (main_leaf, main_path, (496, 300, 120, 60)),
        (side_leaf, side_path, (396, 200, 101, 40)),
    ]:
        for below in belows:
            indexed = _recall(stores.indexed, config, chat_id, leaf, below)
            exact = _recall(stores.exact, config, chat_id, leaf, below)
            assert indexed, f"something is recalled above depth {below}"
            assert [i for i, _ in indexed] == [i for i, _ in exact]
            assert np.allclose([s for _, s in indexed], [s for _, s in exact], atol=1e-5)
            assert {i for i, _ in indexed} <= path - hidden
    # The turn on the main path past the fork recalls the path's near messages, not the
    # sibling branch's many nearer ones (the database's shortlist had to grow for them).
    found = _recall(stores.indexed, config, chat_id, main_leaf, 496)
    texts = {n.id: n.content for n in stores.indexed.path_to(chat_id, main_leaf)}
    assert any(texts[i].startswith("near") for i, _ in found)
