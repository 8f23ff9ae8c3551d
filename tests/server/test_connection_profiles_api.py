"""Connection profiles over HTTP: kept, listed, and a chat switched to one in one request
(its connection and model for the next turn, its preset in use)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.server.conftest import rev
from tests.stubs.model_server import Reply, StubServer
from tests.support.api import events, generate


def test_a_chat_switched_to_a_profile_asks_its_connection_for_its_model(
    client: TestClient, stub: StubServer, chat_id: str
) -> None:
    other = {"name": "other", "api": "openai", "url": stub.base_url("openai"), "model": "m2"}
    assert client.post("/api/connections", json=other).status_code == 201
    profile = {
        "connection": "other",
        "model": "stub-model",
        "preset": "Nowhere",
        "tokenizer": "llama3",
    }
    kept = client.put("/api/connection-profiles/Fast%20one", json=profile)
    assert kept.status_code == 200, kept.text
    assert kept.json()["name"] == "Fast one" and kept.json()["stop_strings"] is None
    assert [p["name"] for p in client.get("/api/connection-profiles").json()] == ["Fast one"]
    refused = client.put("/api/connection-profiles/Bad", json={**profile, "connection": "nope"})
    assert refused.status_code == 404
    bad = client.put("/api/connection-profiles/Bad", json={**profile, "tokenizer": "klingon"})
    assert bad.status_code in (400, 422) and "tokenizer" in bad.text

    switched = client.post(
        f"/api/chats/{chat_id}/profile",
        json={"profile": "Fast one", "revision": rev(client, chat_id)},
    )
    assert switched.status_code == 200, switched.text
    body = switched.json()
    assert body["chat"]["connection"] == {"name": "other", "model": "stub-model"}
    assert body["missing"] == ["preset"] and "tokenizer" in body["applied"]
    stub.script(Reply(tokens=["Switched."]))
    started = generate(client, chat_id, kind="normal", text="Hello?")
    assert events(client, started["task"]["id"])[-1][0] == "done"
    assert stub.requests[-1].body["model"] == "stub-model"
    # a Chat Completion prompt is counted for its model, whatever the tokenizer setting
    # (SillyTavern's `power_user.tokenizer` is Text Completion's)
    counted = client.post(f"/api/chats/{chat_id}/tokens", json={"text": "hi"}).json()
    assert counted["tokenizer"] == "cl100k_base"
    assert client.delete("/api/connection-profiles/Fast%20one").status_code == 204
    gone = client.post(
        f"/api/chats/{chat_id}/profile",
        json={"profile": "Fast one", "revision": rev(client, chat_id)},
    )
    assert gone.status_code == 404
