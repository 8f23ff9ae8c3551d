"""The bundled local model, for real: a chat turn, continue, impersonate, a swipe, stop
mid-stream, exact token counts, the model's own chat template, through the HTTP API."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from taverna.engine.tokens.registry import get_tokenizer
from taverna.server.app import create_app
from taverna.server.context import AppContext, open_context
from taverna.services.connections import local_models
from taverna.services.connections.local_models import (
    LocalSpec,
    default_model_path,
    model_chat_template,
)
from taverna.services.house.workspace import LOCAL_CONNECTION, seed_local_model
from tests.server.conftest import rev
from tests.support.api import events, generate

pytestmark = pytest.mark.skipif(
    not local_models.available(), reason="the `local` extra is not installed"
)


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppContext]:
    context = open_context(tmp_path_factory.mktemp("local") / "data")
    assert seed_local_model(context.connections) == LOCAL_CONNECTION
    # short replies keep the tests quick on two cores
    context.connections.add(LOCAL_CONNECTION, "local", default=True, options={"max_tokens": 24})
    yield context
    local_models.local_models().stop()
    context.close()


@pytest.fixture(scope="module")
def client(ctx: AppContext) -> Iterator[TestClient]:
    with TestClient(create_app(ctx)) as test_client:
        yield test_client


@pytest.fixture(scope="module")
def character_id(client: TestClient) -> str:
    card = client.post(
        "/api/characters",
        json={
            "name": "Mira",
            "description": "A friendly lighthouse keeper.",
            "first_mes": "Hello there.",
        },
    ).json()
    return str(card["id"])


@pytest.fixture
def chat_id(client: TestClient, character_id: str) -> str:
    return str(client.post("/api/chats", json={"character_id": character_id}).json()["id"])


def reply(client: TestClient, chat_id: str, **body: object) -> list[tuple[str, dict]]:  # type: ignore[type-arg]
    started = generate(client, chat_id, **body)
    return events(client, started["task"]["id"])


def test_a_new_data_folder_defaults_to_the_local_model(client: TestClient) -> None:
    connections = client.get("/api/connections").json()
    assert [(c["name"], c["api"], c["default"]) for c in connections] == [
        (LOCAL_CONNECTION, "local", True)
    ]


def test_a_chat_turn_streams_a_reply_from_the_model(client: TestClient, chat_id: str) -> None:
    seen = reply(client, chat_id, kind="normal", text="Hi Mira, what do you do here?")
    assert seen[-1][0] == "done", seen[-1]
    text = "".join(d["text"] for name, d in seen if name == "delta")
    assert text.strip()
    messages = client.get(f"/api/chats/{chat_id}").json()["messages"]
    assert messages[-1]["role"] == "assistant" and messages[-1]["content"].strip()
    generation = messages[-1]["generation"]
    assert generation["provider"] == "local"
    assert generation["prompt_tokens"] > 0 and generation["completion_tokens"] > 0


def test_continue_swipe_and_impersonate(client: TestClient, chat_id: str) -> None:
    assert reply(client, chat_id, kind="normal", text="Tell me a story.")[-1][0] == "done"
    # The reply cut mid-sentence, so the model has something to continue (a finished
    # reply may rightly be continued by nothing at all).
    chat = client.get(f"/api/chats/{chat_id}").json()
    last = chat["messages"][-1]
    before = "Once upon a time, in a harbour town, there lived a"
    edited = client.patch(
        f"/api/chats/{chat_id}/messages/{last['id']}",
        json={"content": before, "revision": chat["revision"]},
    )
    assert edited.status_code == 200, edited.text
    assert reply(client, chat_id, kind="continue")[-1][0] == "done"
    after = client.get(f"/api/chats/{chat_id}").json()["messages"][-1]
    assert after["content"].startswith(before) and len(after["content"]) > len(before)
    assert reply(client, chat_id, kind="swipe")[-1][0] == "done"
    last = client.get(f"/api/chats/{chat_id}").json()["messages"][-1]
    assert (last["candidate_index"], last["candidate_count"]) == (2, 2)
    seen = reply(client, chat_id, kind="impersonate")
    assert seen[-1][0] == "done" and seen[-1][1]["text"].strip()


def test_stop_ends_the_generation_at_once(client: TestClient, chat_id: str) -> None:
    started = generate(client, chat_id, kind="normal", text="Count slowly from one to a thousand.")
    task = started["task"]["id"]
    with client.stream("GET", f"/api/tasks/{task}/events") as response:
        for line in response.iter_lines():
            if line.startswith("event: delta"):
                break
    began = time.perf_counter()
    stopped = client.post(f"/api/tasks/{task}/stop")
    assert stopped.status_code == 200, stopped.text
    assert time.perf_counter() - began < 5
    assert events(client, task)[-1][0] in ("cancelled", "error", "done")
    # the model is free again: the next turn answers
    assert reply(client, chat_id, kind="normal", text="Just say hello.")[-1][0] == "done"


def test_token_counts_are_the_model_s_own(client: TestClient, chat_id: str) -> None:
    path = default_model_path()
    assert path is not None
    url, secret = local_models.local_models().endpoint(LocalSpec.of("", {}))
    counter = get_tokenizer(f"gguf-vocab:{path.resolve()}")
    assert counter.exact
    for text in ("Hello, world!", "<|im_start|>user\nHi<|im_end|>\n", "灯塔守护者 Élodie 🌊", ""):
        answer = httpx.post(
            f"{url}/tokenize",
            json={"content": text},
            headers={"Authorization": f"Bearer {secret}"},
            timeout=30,
        ).json()
        assert counter.count(text) == len(answer["tokens"]), text


def test_the_prompt_uses_the_model_s_own_chat_template(client: TestClient, chat_id: str) -> None:
    path = default_model_path()
    assert path is not None
    template = model_chat_template(path.resolve(), path.resolve().stat().st_mtime)
    assert template is not None and "<|im_start|>" in template.source
    client.post(
        f"/api/chats/{chat_id}/generate",
        json={"kind": "normal", "text": "Where are we?", "revision": rev(client, chat_id)},
    )
    prompt = client.get(f"/api/chats/{chat_id}/prompt").json()
    text = prompt["prompt"]["text"]
    assert "<|im_start|>user\nWhere are we?<|im_end|>" in text.replace("\r", "")
    assert text.rstrip().endswith("<|im_start|>assistant")


def test_a_missing_model_file_is_named(client: TestClient, tmp_path: Path) -> None:
    answer = client.post(
        "/api/connections",
        json={"name": "mine", "api": "local", "model": str(tmp_path / "none.gguf")},
    )
    assert answer.status_code == 404 and "none.gguf" in answer.text


def test_a_group_round_with_the_local_model_cuts_other_speakers(client: TestClient) -> None:
    ids = []
    for name, description in (("Ada", "A lighthouse keeper."), ("Bram", "A fisherman.")):
        card = {"name": name, "description": description, "first_mes": f"{name} waves."}
        ids.append(client.post("/api/characters", json=card).json()["id"])
    group = client.post(
        "/api/groups",
        json={"name": "Harbour", "character_ids": ids, "activation_strategy": "list"},
    ).json()
    chat = client.post(f"/api/groups/{group['id']}/chats", json={}).json()
    started = client.post(
        f"/api/chats/{chat['id']}/round",
        json={"text": "Good evening, both of you.", "revision": rev(client, chat["id"])},
    )
    assert started.status_code == 202, started.text
    round_id = started.json()["round"]["id"]
    for _ in range(600):
        found = client.get(f"/api/rounds/{round_id}").json()
        if found["done"]:
            break
        time.sleep(0.1)
    assert found["done"]
    for task in found["tasks"]:
        assert events(client, task["id"])[-1][0] == "done"
    messages = client.get(f"/api/chats/{chat['id']}").json()["messages"]
    replies = [m for m in messages[3:] if m["role"] == "assistant"]
    assert [m["name"] for m in replies] == ["Ada", "Bram"]
    for message in replies:
        other = "Bram" if message["name"] == "Ada" else "Ada"
        # the other member's name is a stop string: no reply speaks for them on a new line
        assert f"\n{other}:" not in message["content"]


def test_an_idle_model_is_stopped_and_started_again_on_demand() -> None:
    manager = local_models.LocalModels(idle_seconds=1.0)
    spec = LocalSpec.of("", {"n_ctx": 512})
    try:
        url, secret = manager.endpoint(spec)
        assert httpx.get(f"{url}/health", timeout=10).status_code == 200
        # every request but the health check carries the process's secret
        assert httpx.get(f"{url}/props", timeout=10).status_code == 401
        props = httpx.get(f"{url}/props", headers={"Authorization": f"Bearer {secret}"}, timeout=10)
        assert "<|im_start|>" in props.json()["chat_template"]
        assert manager.running() == spec
        for _ in range(100):
            if manager.running() is None:
                break
            time.sleep(0.1)
        assert manager.running() is None  # stopped after a second without use
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"{url}/health", timeout=2)
        again, _ = manager.endpoint(spec)  # the next request starts it again
        assert httpx.get(f"{again}/health", timeout=10).status_code == 200
        assert manager.starts == 2
    finally:
        manager.stop()
