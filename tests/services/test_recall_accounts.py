"""Recall's background embedding is per account: each account's chats are embedded with
the model its own recall settings name (source, endpoint, model), none while its recall
is off; an account whose endpoint is away does not hold up the others. And vectors
stored before their sign bits were get them in the background."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from taverna.model.chat import ChatState, Node, NodeRole, new_id
from taverna.services.chats.service import ChatService
from taverna.services.house.workspace import open_workspace
from taverna.services.memory.recall import (
    EmbeddingBacklog,
    RecallConfig,
    RecallService,
    accounts_plan,
)
from taverna.services.memory.recall_settings import change_recall_settings
from taverna.store import NewChat
from taverna.store.sql import SqlStore, open_store
from tests.stubs.embeddings_server import embeddings_stub


class Fake:
    """An embedding model named `model`: a text's vector from its hash."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.texts: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        rows = [np.frombuffer(t.encode().ljust(32, b"."), dtype=np.uint8)[:32] for t in texts]
        matrix = np.vstack(rows).astype(np.float32) - 100.0
        out: np.ndarray = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
        return out


def _chat(store: SqlStore, owner: str, texts: list[str]) -> str:
    chats = ChatService(store)
    chat = chats.create_chat(f"{owner}'s chat", base_state=ChatState(), owner=owner).chat
    for i, text in enumerate(texts):
        role = NodeRole.USER if i % 2 == 0 else NodeRole.ASSISTANT
        chat = chats.append(chat.id, role, text, revision=chat.revision).chat
    return chat.id


def _models(store: SqlStore, chat_id: str, models: list[str]) -> dict[str, int]:
    return {m: len(store.message_vectors(chat_id, m)) for m in models}


def test_each_accounts_chats_are_embedded_with_its_own_model(store: SqlStore) -> None:
    made: dict[str, Fake] = {}

    def factory(config: RecallConfig) -> Fake:
        name = f"{config.source}:{config.endpoint}:{config.model}"
        return made.setdefault(name, Fake(name))

    recall = RecallService(store, factory)  # type: ignore[arg-type]
    alice = store.add_account("alice", "x").id
    bob = store.add_account("bob", "x").id
    carol = store.add_account("carol", "x").id
    change_recall_settings(store, {"enabled_chats": True}, alice)
    change_recall_settings(
        store,
        {
            "enabled_chats": True,
            "source": "openai",
            "alt_endpoint_url": "http://127.0.0.1:1/v1",
            "openai_model": "small",
        },
        bob,
    )
    chats = {
        owner: _chat(store, owner, [f"{name} says hello.", f"{name} hears back."])
        for owner, name in [(alice, "alice"), (bob, "bob"), (carol, "carol"), ("", "local")]
    }
    local_model = "transformers::text-embedding-3-small"
    bob_model = "openai:http://127.0.0.1:1/v1:small"
    backlog = EmbeddingBacklog(store, plan=lambda: accounts_plan(store, recall))
    assert backlog.drain() == 4
    models = [local_model, bob_model]
    assert _models(store, chats[alice], models) == {local_model: 2, bob_model: 0}
    assert _models(store, chats[bob], models) == {local_model: 0, bob_model: 2}
    assert _models(store, chats[carol], models) == {local_model: 0, bob_model: 0}
    assert _models(store, chats[""], models) == {local_model: 0, bob_model: 0}
    assert sorted(made[bob_model].texts) == ["bob hears back.", "bob says hello."]

    # The single user turns recall on with the same model as alice: one model, both
    # accounts' chats, in the same batches.
    change_recall_settings(store, {"enabled_chats": True}, "")
    plan = accounts_plan(store, recall)
    assert sorted((e.model, tuple(sorted(o))) for e, o in plan) == sorted(
        [(local_model, tuple(sorted(["", alice]))), (bob_model, (bob,))]
    )
    assert backlog.drain() == 2
    assert _models(store, chats[""], models) == {local_model: 2, bob_model: 0}
    assert _models(store, chats[carol], models) == {local_model: 0, bob_model: 0}


def test_an_account_whose_model_fails_rests_while_the_others_go_on(store: SqlStore) -> None:
    class Away(Fake):
        def embed(self, texts: list[str]) -> np.ndarray:
            self.texts.extend(texts)
            raise ConnectionError("the endpoint is away")

    working, away = Fake("working"), Away("away")
    now = [100.0]
    plan = [(working, ("a",)), (away, ("b",))]
    backlog = EmbeddingBacklog(store, plan=lambda: plan, every=30.0, clock=lambda: now[0])
    first = _chat(store, "a", [f"message {i}" for i in range(40)])
    second = _chat(store, "b", ["lost words"])
    assert backlog.step() == 32
    assert len(away.texts) == 1 and away.texts[0].endswith("lost words")
    assert backlog.step() == 8  # the failed model is not asked again while it rests
    assert len(away.texts) == 1
    with pytest.raises(ConnectionError):  # nothing else to do: the failure is said
        now[0] += 31
        backlog.step()
    assert len(store.message_vectors(first, "working")) == 40
    assert store.message_vectors(second, "away") == []


def _wait(check: Callable[[], bool], seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


def test_a_server_embeds_each_accounts_chats_through_its_own_endpoint(tmp_path: Path) -> None:
    with embeddings_stub() as stub:
        workspace = open_workspace(tmp_path / "data", plugins=False)
        try:
            store = workspace.store
            assert workspace.embeddings is not None
            alice = store.add_account("alice", "x").id
            bob = store.add_account("bob", "x").id
            dave = store.add_account("dave", "x").id
            for owner, model, url in [
                (alice, "alpha", stub.url),
                (bob, "beta", stub.url),
                (dave, "gamma", "http://127.0.0.1:9/v1"),  # away
            ]:
                change_recall_settings(
                    store,
                    {
                        "enabled_chats": True,
                        "source": "openai",
                        "alt_endpoint_url": url,
                        "openai_model": model,
                    },
                    owner,
                )
            chats = {
                owner: _chat(store, owner, [f"{owner} one", f"{owner} two", f"{owner} three"])
                for owner in (alice, bob, dave, "")
            }
            workspace.embeddings.wake()
            assert _wait(
                lambda: (
                    len(store.message_vectors(chats[alice], "openai:alpha")) == 3
                    and len(store.message_vectors(chats[bob], "openai:beta")) == 3
                )
            )
            assert store.message_vectors(chats[alice], "openai:beta") == []
            assert store.message_vectors(chats[bob], "openai:alpha") == []
            assert store.message_vectors(chats[dave], "openai:gamma") == []
            for model in ("openai:alpha", "openai:beta", "openai:gamma"):
                assert store.message_vectors(chats[""], model) == []
            # Each endpoint was asked for its own account's texts only.
            assert all(alice in text for text in stub.texts_of("alpha"))
            assert all(bob in text for text in stub.texts_of("beta"))
            assert len(stub.texts_of("alpha")) == len(stub.texts_of("beta")) == 3
            assert stub.texts_of("gamma") == set()
        finally:
            workspace.close()


def test_a_server_gives_vectors_stored_before_their_sign_bits_theirs(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    store = open_store(folder)
    nodes: list[Node] = []
    for i in range(1200):
        nodes.append(Node(new_id(), "", nodes[-1].id if nodes else None, NodeRole.USER, f"m{i}"))
    chat_id = store.import_tree(NewChat(title="old"), nodes, active_leaf_id=nodes[-1].id).id
    due = store.messages_due("old-model", limit=2000)
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((len(due), 32)).astype(np.float32)
    store.save_message_vectors(
        "old-model",
        [(d, vectors[i].tobytes()) for i, d in enumerate(due)],
    )
    with store.engine.begin() as conn:  # as written before the bits were stored
        conn.exec_driver_sql("UPDATE message_vectors SET signs = NULL")
    store.close()

    workspace = open_workspace(folder, plugins=False)  # recall is off: the bits come anyway
    try:
        assert workspace.embeddings is not None

        def unsigned() -> int:
            with workspace.store.engine.connect() as conn:
                return int(
                    conn.exec_driver_sql(
                        "SELECT count(*) FROM message_vectors WHERE signs IS NULL"
                    ).scalar()
                    or 0
                )

        assert _wait(lambda: unsigned() == 0)
        assert workspace.embeddings.signed == 1200
        stored = workspace.store.message_vectors(chat_id, "old-model")
        signs = {s.seq: s.signs for s in workspace.store.message_signs(chat_id, "old-model")}
        for v in stored:
            assert signs[v.seq] == np.packbits(np.frombuffer(v.vector, np.float32) > 0).tobytes()
    finally:
        workspace.close()


def test_a_write_is_looked_for_in_its_chat_alone_and_every_chat_now_and_then(
    store: SqlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the first look in every chat, a write named by its chat is looked for in what
    that chat's writes since added; a write not named (another process's) is found when
    every chat is looked at again, `every` seconds later."""
    embedder = Fake("m")
    now = [0.0]
    backlog = EmbeddingBacklog(store, lambda: embedder, every=30.0, clock=lambda: now[0])
    first = _chat(store, "", ["one", "two"])
    second = _chat(store, "", ["three"])
    assert backlog.step() == 3
    asked: list[object] = []
    inner = store.messages_due

    def due(model: str, **kwargs: object) -> object:
        asked.append(kwargs.get("written"))
        return inner(model, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "messages_due", due)
    chats = ChatService(store)
    before = store.get_chat(first).revision
    chats.append(first, NodeRole.USER, "four", revision=before)
    backlog.wake(first)
    assert backlog.step() == 1
    assert asked == [(first, -1)]  # its first look in this process: the whole chat
    chats.append(first, NodeRole.USER, "five", revision=store.get_chat(first).revision)
    backlog.wake(first)
    assert backlog.step() == 1
    assert asked[-1] == (first, before + 1)  # then only what was written since
    chats.append(second, NodeRole.USER, "six", revision=store.get_chat(second).revision)
    assert backlog.step() == 0  # not named: not looked for yet
    now[0] += 31
    assert backlog.step() == 1
    assert asked[-1] is None
    assert len(store.message_vectors(first, "m")) == 4
    assert len(store.message_vectors(second, "m")) == 2
