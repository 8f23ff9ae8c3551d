"""Recall by meaning: the backlog embeds every message once; a turn recalls only messages
of its own active path, never hidden or deleted ones, within the recall's budget; and
vectorized lorebook entries activate by similarity with their score in the trace."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pytest

from taverna.engine.assembly.context import GenerationType
from taverna.engine.assembly.ledger import render_ledger
from taverna.engine.assembly.recall import RECALLED_KIND
from taverna.model.chat import ChatState, NodeRole
from taverna.model.lorebook import Entry, Lorebook
from taverna.model.prompt import Prompt
from taverna.providers.embeddings import LocalEmbedder
from taverna.providers.request import Api
from taverna.services.chats.service import ChatService
from taverna.services.connections.service import ConnectionService
from taverna.services.library.active_settings import set_active
from taverna.services.library.service import LibraryService
from taverna.services.memory.recall import EmbeddingBacklog, RecallService, recall_config
from taverna.services.memory.recall.backlog import embed_due
from taverna.services.turns import GenerationService
from taverna.services.turns.context import TurnContexts
from taverna.services.turns.paths import PathEnds
from taverna.store.sql import SqlStore
from taverna.store.testing import backends, temporary_store
from tests.support.folders import small_recall

NOW = datetime(2026, 5, 1, tzinfo=UTC)
FILLER = [
    "We walk along the road and talk about the weather for a while.",
    "The weather is mild today, a little cloudy over the hills.",
    "Let us keep walking; the inn is still some miles away.",
    "I count the milestones as we pass them, one by one.",
]
pytestmark = pytest.mark.skipif(
    not LocalEmbedder.available(), reason="the local embedding model is not installed"
)


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


# Each database with its own vector search (sqlite-vec, pgvector where the server has it),
# that search's shortlist made from the chat's sign bits in memory instead ("bits"), and
# the search in the process (exact), forced.
SEARCHES = [(b, m) for m in ("store", "bits", "exact") for b in backends()]
BITS: dict[int, Literal["at once", "never"]] = {}  # id(store) -> how its service reads bits


@pytest.fixture(params=SEARCHES, ids=lambda p: f"{p[0]}-{p[1]}")
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStore]:
    backend, mode = request.param
    with temporary_store(backend, tmp_path, vector_search=mode != "exact") as opened:
        BITS[id(opened)] = "at once" if mode == "bits" else "never"
        yield opened
        del BITS[id(opened)]


def _service(store: SqlStore, embedder: Any) -> RecallService:
    return RecallService(store, lambda config: embedder, bits=BITS.get(id(store), "never"))


def _chat(store: SqlStore, opening: list[tuple[NodeRole, str]], filler: int) -> str:
    chats = ChatService(store)
    chat = chats.create_chat("memory", greetings=["Hello."], base_state=ChatState()).chat
    for role, text in opening:
        chat = chats.append(chat.id, role, text, revision=chat.revision).chat
    for i in range(filler):
        role = NodeRole.USER if i % 2 == 0 else NodeRole.ASSISTANT
        chat = chats.append(chat.id, role, FILLER[i % len(FILLER)], revision=chat.revision).chat
    return chat.id


def _turn(store: SqlStore, tmp_path: Path, chat_id: str, embedder: LocalEmbedder) -> Prompt:
    recall = _service(store, embedder)
    turns = TurnContexts(store, clock=lambda: NOW, paths=PathEnds(store), recall=recall)
    service = GenerationService(
        store, ConnectionService(store, tmp_path), turns, paths=turns.paths, clock=lambda: NOW
    )
    chat = store.get_chat(chat_id)
    turn = service.turn(chat, chat.active_leaf_id, GenerationType.NORMAL, Api.OPENAI, dry_run=True)
    return turns.build(turn).prompt


def _recalled(prompt: Prompt) -> dict[str, str]:
    return {i.source: i.text for i in prompt.ledger.items if i.kind == RECALLED_KIND and i.included}


def _ask(store: SqlStore, chat_id: str, text: str) -> None:
    chats = ChatService(store)
    chat = store.get_chat(chat_id)
    chats.append(chat_id, NodeRole.USER, text, revision=chat.revision)


def _asked_of_the_dragon(store: SqlStore, embedder: Any, **vectors: object) -> str:
    """Recall on, a long chat that opened with the dragon, embedded, then asked where it went."""
    small_recall(store, **vectors)
    chat_id = _chat(store, [(NodeRole.USER, DRAGON), (NodeRole.ASSISTANT, LIGHTHOUSE)], 40)
    EmbeddingBacklog(store, lambda: embedder).drain()
    _ask(store, chat_id, "Where did that dragon go after it burned the mill?")
    return chat_id


DRAGON = "The red dragon burned the mill at Oxbridge and flew north to the mountains."
LIGHTHOUSE = "We swore to meet again at the old lighthouse at midnight, on the full moon."


def test_the_backlog_embeds_every_message_once_and_an_edit_again(
    store: SqlStore, embedder: LocalEmbedder
) -> None:
    chat_id = _chat(store, [(NodeRole.USER, DRAGON)], 6)
    backlog = EmbeddingBacklog(store, lambda: embedder)
    assert backlog.drain() == 8  # greeting, opening, six more
    assert store.messages_due(embedder.model, limit=10) == []
    assert embed_due(store, embedder) == 0
    path = ChatService(store).active_path(chat_id).nodes
    chat = store.get_chat(chat_id)
    ChatService(store).edit(chat_id, path[1].id, "A new text.", revision=chat.revision)
    due = store.messages_due(embedder.model, limit=10)
    assert [d.node_id for d in due] == [path[1].id]
    assert backlog.drain() == 1
    assert len(store.message_vectors(chat_id, embedder.model)) == 8


def test_a_turn_recalls_an_old_message_near_in_meaning(
    store: SqlStore, tmp_path: Path, embedder: LocalEmbedder
) -> None:
    chat_id = _asked_of_the_dragon(store, embedder)
    prompt = _turn(store, tmp_path, chat_id, embedder)
    path = ChatService(store).active_path(chat_id).nodes
    dragon_id = path[1].id
    recalled = _recalled(prompt)
    assert dragon_id in recalled
    assert "dragon burned the mill" in recalled[dragon_id]
    text = "\n".join(m.content for m in prompt.messages)
    assert "Past events:" in text and "dragon burned the mill" in text
    # The old message itself is outside the window: it is in the prompt only as recalled.
    history = [i.source for i in prompt.ledger.items if i.kind == "history" and i.included]
    assert dragon_id not in history
    assert "recalled messages:" in render_ledger(prompt)
    scores = [i.reason for i in prompt.ledger.items if i.kind == RECALLED_KIND]
    assert all(r.startswith("score ") for r in scores)


def test_a_branch_never_recalls_a_sibling_branchs_message(
    store: SqlStore, tmp_path: Path, embedder: LocalEmbedder
) -> None:
    small_recall(store, score_threshold=0)  # every near message counts: none of A may
    chats = ChatService(store)
    chat_id = _chat(store, [], 0)
    chat = store.get_chat(chat_id)
    fork = chat.active_leaf_id
    assert fork is not None
    # Branch A: the dragon story, then filler.
    chat = chats.append(chat_id, NodeRole.USER, DRAGON, revision=chat.revision).chat
    for i in range(30):
        role = NodeRole.USER if i % 2 == 0 else NodeRole.ASSISTANT
        chat = chats.append(chat_id, role, FILLER[i % 4], revision=chat.revision).chat
    a_leaf = chat.active_leaf_id
    # Branch B from the greeting: other events, then filler and the dragon question.
    chat = chats.branch_from(chat_id, fork, "other", revision=chat.revision).chat
    chat = chats.append(chat_id, NodeRole.USER, LIGHTHOUSE, revision=chat.revision).chat
    for i in range(30):
        role = NodeRole.USER if i % 2 == 0 else NodeRole.ASSISTANT
        chat = chats.append(chat_id, role, FILLER[(i + 1) % 4], revision=chat.revision).chat
    EmbeddingBacklog(store, lambda: embedder).drain()
    _ask(store, chat_id, "Where did that dragon go after it burned the mill?")
    prompt = _turn(store, tmp_path, chat_id, embedder)
    a_path = {n.id for n in store.path_to(chat_id, a_leaf or "")}
    b_path = {n.id for n in ChatService(store).active_path(chat_id).nodes}
    recalled = _recalled(prompt)
    assert recalled, "something of branch B is recalled"
    assert not set(recalled) & (a_path - b_path)
    assert set(recalled) <= b_path
    assert all("dragon" not in text for text in recalled.values())

    # Two turns at once in one process, one on each branch: each keeps to its own path.
    service = _service(store, embedder)
    config = recall_config({"extension_settings": {"vectors": {"enabled_chats": True, "query": 1}}})
    b_leaf = store.get_chat(chat_id).active_leaf_id
    b_nodes = store.path_tail(chat_id, b_leaf or "", limit=5).nodes
    a_nodes = store.path_tail(chat_id, a_leaf or "", limit=5).nodes
    on_b = service.for_turn(config, chat_id, b_leaf, b_nodes)
    on_a = service.for_turn(config, chat_id, a_leaf, a_nodes)
    assert on_b is not None and on_a is not None
    from_b = {m.id for m in on_b.for_window(b_nodes[0].depth).messages}
    from_a = {m.id for m in on_a.for_window(a_nodes[0].depth).messages}
    assert from_b and from_b <= b_path
    assert from_a and from_a <= a_path


def test_hidden_and_deleted_messages_are_never_recalled(
    store: SqlStore, tmp_path: Path, embedder: LocalEmbedder
) -> None:
    small_recall(store, score_threshold=0)
    chat_id = _chat(
        store,
        [
            (NodeRole.USER, DRAGON),
            (NodeRole.ASSISTANT, "The dragon burned the mill and then the granary at Oxbridge."),
        ],
        40,
    )
    EmbeddingBacklog(store, lambda: embedder).drain()
    chats = ChatService(store)
    path = chats.active_path(chat_id).nodes
    hidden_id, deleted_id = path[1].id, path[2].id
    chat = store.get_chat(chat_id)
    chat = chats.set_hidden(chat_id, [hidden_id], True, revision=chat.revision).chat
    chats.delete(chat_id, deleted_id, revision=chat.revision)
    _ask(store, chat_id, "Where did that dragon go after it burned the mill?")
    prompt = _turn(store, tmp_path, chat_id, embedder)
    recalled = _recalled(prompt)
    assert recalled, "other messages are recalled"
    assert hidden_id not in recalled and deleted_id not in recalled
    assert all("dragon" not in text for text in recalled.values())


def test_the_recalled_block_keeps_to_its_own_budget(
    store: SqlStore, tmp_path: Path, embedder: LocalEmbedder
) -> None:
    chat_id = _asked_of_the_dragon(store, embedder, budget=12, insert=3)
    prompt = _turn(store, tmp_path, chat_id, embedder)
    lines = [i for i in prompt.ledger.items if i.kind == RECALLED_KIND]
    assert lines and all(not i.included for i in lines if i.tokens > 12)
    assert any("over the recall budget of 12 tokens" in i.reason for i in lines)
    assert sum(i.tokens for i in lines if i.included) <= 12


def test_a_vectorized_entry_activates_by_similarity_with_its_score(
    store: SqlStore, tmp_path: Path, embedder: LocalEmbedder
) -> None:
    small_recall(store, enabled_chats=False, enabled_world_info=True, score_threshold=0.2)
    lib = LibraryService(store)
    lib.put_lorebook(
        Lorebook(
            name="Lore",
            entries=(
                Entry(
                    uid=1,
                    key=("zzz-never",),
                    content="Dragons of the north hoard mills' grain.",
                    vectorized=True,
                ),
                Entry(uid=2, key=("zzz-never",), content="Tea is served at five.", vectorized=True),
                Entry(uid=3, key=("zzz-never",), content="Dragons are feared.", vectorized=False),
            ),
        )
    )
    chats = ChatService(store)
    chat = chats.create_chat(
        "lore", greetings=["Hello."], metadata={"world_info": "Lore"}, base_state=ChatState()
    ).chat
    chats.append(
        chat.id, NodeRole.USER, "The dragon is coming for the mill!", revision=chat.revision
    )
    prompt = _turn(store, tmp_path, chat.id, embedder)
    text = "\n".join(m.content for m in prompt.messages)
    assert "hoard mills' grain" in text
    assert "Dragons are feared." not in text  # not vectorized, and no key matched
    trace = {(s.book, s.uid): s for s in prompt.ledger.trace}
    assert trace[("Lore", 1)].reason.startswith("similarity ")
    assert "(vectorized)" in trace[("Lore", 1)].reason


def test_a_workspace_embeds_new_messages_in_the_background_while_recall_is_on(
    tmp_path: Path,
) -> None:
    import time

    from taverna.providers.embeddings import LOCAL_MODEL
    from taverna.services.house.workspace import open_workspace

    workspace = open_workspace(tmp_path / "data")
    try:
        assert workspace.embeddings is not None
        store = workspace.store
        chat_id = _chat(store, [(NodeRole.USER, DRAGON)], 4)  # type: ignore[arg-type]
        time.sleep(0.3)
        assert store.message_vectors(chat_id, LOCAL_MODEL) == []  # recall is off
        small_recall(store)  # type: ignore[arg-type]
        workspace.embeddings.wake()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if len(store.message_vectors(chat_id, LOCAL_MODEL)) == 6:
                break
            time.sleep(0.2)
        assert len(store.message_vectors(chat_id, LOCAL_MODEL)) == 6
    finally:
        workspace.close()


def test_the_next_turn_recalls_the_same_with_one_assembly(
    store: SqlStore, tmp_path: Path, embedder: LocalEmbedder
) -> None:
    chat_id = _asked_of_the_dragon(store, embedder)
    recall = _service(store, embedder)
    turns = TurnContexts(store, clock=lambda: NOW, paths=PathEnds(store), recall=recall)
    service = GenerationService(
        store, ConnectionService(store, tmp_path), turns, paths=turns.paths, clock=lambda: NOW
    )

    def build() -> Prompt:
        chat = store.get_chat(chat_id)
        turn = service.turn(
            chat, chat.active_leaf_id, GenerationType.NORMAL, Api.OPENAI, dry_run=True
        )
        return turns.build(turn).prompt

    first = build()
    before = turns.assemblies
    second = build()
    assert turns.assemblies - before == 1
    assert _recalled(second) == _recalled(first) != {}
    assert [m.content for m in second.messages] == [m.content for m in first.messages]


def test_the_path_index_follows_any_move_of_the_paths_end(store: SqlStore) -> None:
    import random

    from taverna.model.chat import Node, new_id
    from taverna.services.memory.recall import path_index as recall_module
    from taverna.services.memory.recall.path_index import PathIndex
    from taverna.store import NewChat

    rng = random.Random(5)
    nodes: list[Node] = []
    for i in range(400):
        parent = rng.choice(nodes[-30:]).id if nodes and rng.random() < 0.9 else None
        if i and parent is None:
            parent = nodes[-1].id
        nodes.append(Node(new_id(), "", parent, NodeRole.USER, f"m{i}"))
    chat = store.import_tree(NewChat(title="tree"), nodes, active_leaf_id=nodes[-1].id)
    index = PathIndex(chat.id)
    old_step = recall_module.CLIMB_STEP
    recall_module.CLIMB_STEP = 7  # small steps: a move climbs several of them
    try:
        for leaf in [rng.choice(nodes).id for _ in range(40)] + [nodes[-1].id, nodes[0].id]:
            index.follow(store, leaf)
            expected = [n.id for n in store.path_to(chat.id, leaf)]
            assert index.ids == expected
            assert all(index.holds(node_id, depth) for depth, node_id in enumerate(expected))
    finally:
        recall_module.CLIMB_STEP = old_step


def test_past_the_exact_limit_the_search_agrees_with_an_exact_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import numpy as np

    from taverna.services.memory.recall import chat_vectors as recall_module
    from taverna.services.memory.recall.chat_vectors import ChatVectors
    from taverna.store.repository import StoredVector

    rng = np.random.default_rng(3)
    # Texts' vectors gather around topics: 60 topics, each row near one.
    topics = rng.standard_normal((60, 512)).astype(np.float32)
    rows = topics[rng.integers(0, 60, 3000)] + 0.8 * rng.standard_normal((3000, 512)).astype(
        np.float32
    )
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)

    class Store:
        def message_vectors(
            self, chat_id: str, model: str, *, after: int = 0
        ) -> list[StoredVector]:
            return [
                StoredVector(i + 1, f"n{i}", i, rows[i].tobytes())
                for i in range(len(rows))
                if i + 1 > after
            ]

    vectors = ChatVectors("c", "m")
    vectors.refresh(Store())  # type: ignore[arg-type]
    monkeypatch.setattr(recall_module, "EXACT_ROWS", 100)
    monkeypatch.setattr(recall_module, "SHORTLIST", 200)
    for q in range(10):
        query = rows[q * 7] + 0.02 * rng.standard_normal(512).astype(np.float32)
        query /= np.linalg.norm(query)
        exact = np.argsort(-(rows[:2500] @ query))[:10]
        found = [row for row, _ in vectors.ranked(query, below_depth=2500)][:10]
        assert len(set(found) & set(exact.tolist())) >= 9
        assert all(row < 2500 for row, _ in vectors.ranked(query, below_depth=2500))


def test_taverna_chat_prompt_shows_the_recalled_messages(
    tmp_path: Path, embedder: LocalEmbedder
) -> None:
    from importlib.resources import files

    from typer.testing import CliRunner

    import taverna.cli.chat  # noqa: F401  (registers the command)
    from taverna.cli.main import app
    from taverna.model.chat import CharacterRef
    from taverna.services.house.data import open_data

    data = tmp_path / "data"
    with open_data(data) as opened:
        store = opened.store
        card = LibraryService(store).import_bytes(
            (files("taverna") / "data" / "Ione Calder.png").read_bytes(), "Ione Calder.png"
        )
        small_recall(store)  # type: ignore[arg-type]
        # The preview asks no model; a connection names the API the prompt is for.
        ConnectionService(store, opened.path).add(
            "local", "openai", url="http://127.0.0.1:9/v1", model="m", key="sk-unused"
        )
        chats = ChatService(store)
        chat = chats.create_chat(
            "road",
            characters=[CharacterRef("Ione Calder", card.id)],
            greetings=["Hello."],
            base_state=ChatState(),
        ).chat
        chat = chats.append(chat.id, NodeRole.USER, DRAGON, revision=chat.revision).chat
        for i in range(40):
            role = NodeRole.USER if i % 2 == 0 else NodeRole.ASSISTANT
            chat = chats.append(chat.id, role, FILLER[i % 4], revision=chat.revision).chat
        _ask(store, chat.id, "Where did that dragon go after it burned the mill?")  # type: ignore[arg-type]
        EmbeddingBacklog(store, lambda: embedder).drain()
        chat_id = chat.id
    result = CliRunner().invoke(
        app,
        ["chat", "Ione Calder", "--chat", chat_id, "--data", str(data)],
        input="/prompt\n/quit\n",
    )
    assert result.exit_code == 0, result.output
    assert "recalled messages:" in result.output
    assert "score 0." in result.output and "dragon burned the mill" in result.output


def test_sillytavern_vector_settings_import_and_turn_recall_on(store: SqlStore) -> None:
    import json

    from taverna.services.interchange.settings_import import import_settings
    from taverna.services.memory.recall import stored_config

    vectors = {
        "enabled_chats": True,
        "template": "Memories:\n{{text}}",
        "position": 1,
        "depth": 4,
        "depth_role": 0,
        "insert": 5,
        "query": 3,
        "score_threshold": 0.3,
        "enabled_world_info": True,
        "max_entries": 2,
        "source": "transformers",
    }
    doc = {"main_api": "openai", "extension_settings": {"vectors": vectors}}
    import_settings(LibraryService(store), json.dumps(doc).encode(), file="settings.json")
    config = stored_config(store)
    assert config.enabled_chats and config.enabled_world_info
    assert config.placement.template == "Memories:\n{{text}}"
    assert config.placement.position.value == 1 and config.placement.depth == 4
    assert (config.placement.insert, config.query, config.max_entries) == (5, 3, 2)
    assert config.score_threshold == config.placement.score_threshold == 0.3


def test_a_turn_whose_end_is_not_stored_yet_recalls_from_its_path(
    store: SqlStore, embedder: LocalEmbedder
) -> None:
    """The message being sent is the turn's end before it is stored: recall holds the
    path of its stored parent (and keeps doing so for the next turns)."""
    from taverna.model.chat import Node, new_id

    chat_id = _chat(store, [(NodeRole.USER, DRAGON), (NodeRole.ASSISTANT, LIGHTHOUSE)], 30)
    EmbeddingBacklog(store, lambda: embedder).drain()
    service = _service(store, embedder)
    config = recall_config({"extension_settings": {"vectors": {"enabled_chats": True, "query": 1}}})
    for _ in range(2):
        chat = store.get_chat(chat_id)
        tail = list(store.path_tail(chat_id, chat.active_leaf_id or "", limit=5).nodes)
        pending = Node(
            new_id(), chat_id, chat.active_leaf_id, NodeRole.USER, "Where did the red dragon fly?"
        )
        found = service.for_turn(config, chat_id, pending.id, [*tail, pending])
        assert found is not None
        recalled = {m.id: m.text for m in found.for_window(tail[0].depth).messages}
        assert any("dragon burned the mill" in text for text in recalled.values())
        _ask(store, chat_id, "And then?")


class CountingEmbedder:
    """The local model, noting every text it embeds."""

    def __init__(self, inner: LocalEmbedder) -> None:
        self.inner = inner
        self.texts: list[str] = []

    @property
    def model(self) -> str:
        return self.inner.model

    def embed(self, texts: Sequence[str]) -> Any:
        self.texts.extend(texts)
        return self.inner.embed(texts)


def test_a_sent_message_is_embedded_once_for_its_turn_a_regenerate_and_the_backlog(
    tmp_path: Path, embedder: LocalEmbedder
) -> None:
    """The send starts embedding the person's message beside the prompt's build; the turn
    recalls with it, a regenerate finds it made, and the backlog stores that vector."""
    import asyncio

    from tests.stubs import start_stub

    counting = CountingEmbedder(embedder)
    asked = "Where did that dragon go after it burned the mill?"
    with temporary_store("sqlite", tmp_path) as store, start_stub() as stub:
        small_recall(store)
        chat_id = _chat(store, [(NodeRole.USER, DRAGON), (NodeRole.ASSISTANT, LIGHTHOUSE)], 40)
        backlog = EmbeddingBacklog(store, lambda: counting)
        backlog.drain()
        recall = RecallService(store, lambda config: counting)
        backlog.shared = recall.texts
        turns = TurnContexts(store, paths=PathEnds(store), recall=recall)
        connections = ConnectionService(store, tmp_path)
        connections.add("stub", "openai", url=stub.base_url("openai"), model="stub-model")
        service = GenerationService(store, connections, turns, paths=turns.paths)
        counting.texts.clear()

        async def main() -> None:
            await (await service.send(chat_id, asked)).wait()
            await (await service.regenerate(chat_id)).wait()

        try:
            asyncio.run(main())
        finally:
            recall.close()
        sent = json.dumps(stub.requests[0].body)
        assert "dragon burned the mill" in sent  # recalled with the message being sent
        assert counting.texts.count(asked) == 1
        assert backlog.drain() >= 2  # the message and the replies
        assert counting.texts.count(asked) == 1
        path = store.active_path(chat_id).nodes
        assert path[-2].content == asked
        assert store.node_vectors(embedder.model, [path[-2].id])


def test_a_message_foreseen_is_embedded_ahead_and_the_turn_asks_the_model_nothing(
    tmp_path: Path, embedder: LocalEmbedder
) -> None:
    import threading

    from taverna.model.chat import Node, new_id

    threads: list[str] = []

    class Noting(CountingEmbedder):
        def embed(self, texts: Sequence[str]) -> Any:
            threads.append(threading.current_thread().name)
            return super().embed(texts)

    counting = Noting(embedder)
    asked = "Where did that dragon go after it burned the mill?"
    with temporary_store("sqlite", tmp_path) as store:
        small_recall(store)
        chat_id = _chat(store, [(NodeRole.USER, DRAGON), (NodeRole.ASSISTANT, LIGHTHOUSE)], 40)
        EmbeddingBacklog(store, lambda: counting).drain()
        service = RecallService(store, lambda config: counting)
        counting.texts.clear()
        threads.clear()
        try:
            ahead = service.foresee(chat_id, "", asked)
            assert ahead is not None
            ahead.result(timeout=60)
            assert service.texts.get(embedder.model, asked) is not None
            assert counting.texts == [asked] and threads[0].startswith("embed-ahead")
            chat = store.get_chat(chat_id)
            tail = list(store.path_tail(chat_id, chat.active_leaf_id or "", limit=5).nodes)
            pending = Node(new_id(), chat_id, chat.active_leaf_id, NodeRole.USER, asked)
            config = recall_config(
                {"extension_settings": {"vectors": {"enabled_chats": True, "query": 1}}}
            )
            found = service.for_turn(config, chat_id, pending.id, [*tail, pending])
            assert found is not None
            recalled = [m.text for m in found.for_window(tail[0].depth).messages]
            assert DRAGON in recalled
            assert counting.texts == [asked]  # the turn's question asked the model nothing
            # Recall off: nothing is embedded ahead.
            set_active(store, "extension_settings", {"vectors": {"enabled_chats": False}})
            ahead = service.foresee(chat_id, "", "Another message entirely.")
            assert ahead is not None
            ahead.result(timeout=60)
            assert counting.texts == [asked]
        finally:
            service.close()


def test_a_chats_sign_bits_are_read_in_the_background_while_the_database_searches(
    tmp_path: Path, embedder: LocalEmbedder
) -> None:
    import time

    with temporary_store("sqlite", tmp_path) as store:
        chat_id = _chat(store, [(NodeRole.USER, DRAGON)], 20)
        EmbeddingBacklog(store, lambda: embedder).drain()
        service = RecallService(store, lambda config: embedder)
        assert service.chat_bits(chat_id, embedder.model) is None  # the read starts
        deadline = time.monotonic() + 60
        while (bits := service.chat_bits(chat_id, embedder.model)) is None:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert len(bits) == 22
        _ask(store, chat_id, "And then?")
        EmbeddingBacklog(store, lambda: embedder).drain()
        refreshed = service.chat_bits(chat_id, embedder.model)
        assert refreshed is bits and len(bits) == 23  # only the new row is read


def test_the_backlog_shares_a_few_new_messages_vectors_with_the_turns(
    tmp_path: Path, embedder: LocalEmbedder
) -> None:
    """A reply just saved is embedded by the backlog through the texts' vectors the turns
    read, so the next turn's question finds it there (or waits for it) instead of
    embedding it again; a long batch (catching up) is embedded in one call."""
    counting = CountingEmbedder(embedder)
    with temporary_store("sqlite", tmp_path) as store:
        small_recall(store)
        chat_id = _chat(store, [(NodeRole.USER, DRAGON)], 6)
        service = RecallService(store, lambda config: counting)
        backlog = EmbeddingBacklog(store, lambda: counting, shared=service.texts)
        assert backlog.drain() == 8
        assert service.texts.get(embedder.model, DRAGON) is None  # a batch of 8: one call
        chat = store.get_chat(chat_id)
        ChatService(store).append(chat_id, NodeRole.ASSISTANT, LIGHTHOUSE, revision=chat.revision)
        assert backlog.drain() == 1
        assert service.texts.get(embedder.model, LIGHTHOUSE) is not None
        counting.texts.clear()
        config = recall_config({"extension_settings": {"vectors": {"enabled_chats": True}}})
        chat = store.get_chat(chat_id)
        tail = store.path_tail(chat_id, chat.active_leaf_id or "", limit=4).nodes
        assert service.for_turn(config, chat_id, chat.active_leaf_id, tail) is not None
        assert counting.texts == []


def test_a_send_with_recall_off_reads_nothing_until_the_settings_change(
    tmp_path: Path, embedder: LocalEmbedder
) -> None:
    """With a library watch, a send asks the store nothing while recall stays off; turning
    it on (a settings write) is seen at the next send, which embeds ahead again."""
    import sqlalchemy as sa

    from taverna.services.library.watch import LibraryWatch

    counting = CountingEmbedder(embedder)
    with temporary_store("sqlite", tmp_path) as store:
        small_recall(store, enabled_chats=False)
        chat_id = _chat(store, [(NodeRole.USER, DRAGON)], 4)
        service = RecallService(store, lambda config: counting, watch=LibraryWatch().watch(store))
        statements: list[str] = []

        def note(_c: Any, _cur: Any, text: str, *_: Any) -> None:
            statements.append(text)

        try:
            first = service.foresee(chat_id, "", "A first message.")
            assert first is not None
            first.result(timeout=60)
            sa.event.listen(store.engine, "before_cursor_execute", note)
            for i in range(3):
                ahead = service.foresee(chat_id, "", f"Message {i}.")
                assert ahead is not None
                ahead.result(timeout=60)
            sa.event.remove(store.engine, "before_cursor_execute", note)
            assert statements == [] and counting.texts == []
            small_recall(store)  # recall on
            ahead = service.foresee(chat_id, "", "Now it counts.")
            assert ahead is not None
            ahead.result(timeout=60)
            assert len(counting.texts) == 1 and "Now it counts." in counting.texts[0]
        finally:
            service.close()
