"""The chat's input bar: a token count of the typed text with the chat's tokenizer, the
persona the chat speaks as, and the connection a turn goes to."""

from __future__ import annotations

from fastapi.testclient import TestClient

from taverna.engine.tokens.registry import get_tokenizer
from tests.server.conftest import rev
from tests.stubs.model_server import Reply, StubServer
from tests.support.api import events, generate


def test_typed_text_is_counted_with_the_chat_tokenizer(client: TestClient, chat_id: str) -> None:
    text = "The lighthouse keeper counts the ships that pass at night."
    found = client.post(f"/api/chats/{chat_id}/tokens", json={"text": text})
    assert found.status_code == 200, found.text
    body = found.json()
    assert body["tokenizer"]
    assert body["tokens"] == get_tokenizer(body["tokenizer"]).count(text) > 5
    prompt = client.get(f"/api/chats/{chat_id}/prompt").json()["prompt"]
    assert body["prompt_tokens"] == prompt["ledger"]["total_tokens"] > 0
    empty = client.post(f"/api/chats/{chat_id}/tokens", json={"text": ""}).json()
    assert empty["tokens"] == 0


def test_counting_for_a_missing_connection_is_a_clear_error(
    client: TestClient,
    chat_id: str,
) -> None:
    found = client.post(f"/api/chats/{chat_id}/tokens", json={"text": "hi", "connection": "nope"})
    assert found.status_code == 404
    assert "nope" in found.text


def test_the_chat_speaks_as_the_chosen_persona(client: TestClient, chat_id: str) -> None:
    ids = [
        client.post("/api/personas", json={"name": name, "is_default": name == "Ann"}).json()["id"]
        for name in ("Ann", "Bo")
    ]
    changed = client.put(
        f"/api/chats/{chat_id}/persona",
        json={"persona_id": ids[1], "revision": rev(client, chat_id)},
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["persona"]["name"] == "Bo"
    assert client.get(f"/api/chats/{chat_id}").json()["persona"]["id"] == ids[1]
    missing = client.put(
        f"/api/chats/{chat_id}/persona",
        json={"persona_id": "nobody", "revision": rev(client, chat_id)},
    )
    assert missing.status_code == 404
    assert client.get(f"/api/chats/{chat_id}").json()["persona"]["name"] == "Bo"


def test_a_turn_goes_to_the_chosen_connection(
    client: TestClient,
    stub: StubServer,
    chat_id: str,
) -> None:
    other = {"name": "other", "api": "openai", "url": stub.base_url("openai"), "model": "m2"}
    assert client.post("/api/connections", json=other).status_code == 201
    # The stub serves "stub-model" only: the chosen connection's model is refused by name.
    started = generate(client, chat_id, kind="normal", text="Hello?", connection="other")
    seen = events(client, started["task"]["id"])
    assert seen[-1][0] == "error" and "m2" in seen[-1][1]["message"]
    stub.script(Reply(tokens=["Yes."]))
    started = generate(client, chat_id, kind="normal", text="Hello again?")
    assert events(client, started["task"]["id"])[-1][0] == "done"
    assert stub.requests[-1].body["model"] == "stub-model"
    missing = client.post(
        f"/api/chats/{chat_id}/generate",
        json={"text": "Hi", "connection": "nope", "revision": rev(client, chat_id)},
    )
    assert missing.status_code == 404 and "nope" in missing.text
