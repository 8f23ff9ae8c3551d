"""Summary routes: read, make (a stub model server answers), edit, remove; the settings."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.server.conftest import rev
from tests.stubs.model_server import Reply, StubServer
from tests.support.api import connect, events, start_chat


@pytest.fixture
def chat_id(client: TestClient, stub: StubServer) -> str:
    connect(client, stub)
    return start_chat(client, name="Mira", first_mes="Welcome, {{user}}.")


def test_a_summary_is_made_read_edited_and_removed(
    client: TestClient, chat_id: str, stub: StubServer
) -> None:
    empty = client.get(f"/api/chats/{chat_id}/summary").json()
    assert empty["current"] is None and empty["along"] == []

    stub.script(Reply(tokens=["Mira welcomed the guest."]))
    made = client.post(f"/api/chats/{chat_id}/summary/generate")
    assert made.status_code == 200, made.text
    body = made.json()
    assert body["made"] == "Mira welcomed the guest." and body["cut"] is False
    assert body["current"]["text"] == "Mira welcomed the guest."
    assert body["current"]["number"] == 1 and body["current"]["covers"] == 1
    leaf = client.get(f"/api/chats/{chat_id}").json()["messages"][-1]["id"]
    assert body["current"]["node_id"] == body["node_id"] == leaf

    edited = client.put(
        f"/api/chats/{chat_id}/summary",
        json={"text": "Mira met a guest.", "revision": rev(client, chat_id)},
    )
    assert edited.status_code == 200 and edited.json()["current"]["text"] == "Mira met a guest."

    # it covers the last message, so it goes in once a message follows (SillyTavern's rule)
    prompt = client.get(f"/api/chats/{chat_id}/prompt").json()
    assert "Mira met a guest." not in str(prompt["prompt"]["messages"])
    stub.script(Reply(tokens=["Come in."]))
    started = client.post(
        f"/api/chats/{chat_id}/generate",
        json={"kind": "normal", "text": "Hello.", "revision": rev(client, chat_id)},
    )
    assert started.status_code == 202, started.text
    events(client, started.json()["task"]["id"])
    sent = stub.requests[-1].body["messages"]
    assert {"role": "system", "content": "[Summary: Mira met a guest.]"} in sent
    # the inspector's ledger says which summary went in and which message it belongs to
    reply = client.get(f"/api/chats/{chat_id}").json()["messages"][-1]["id"]
    ledger = client.get(f"/api/chats/{chat_id}/messages/{reply}/prompt").json()["prompt"]["ledger"]
    items = [i for i in ledger["items"] if i["kind"] == "summary"]
    assert items and items[0]["source"] == leaf and items[0]["included"]

    stale = client.delete(f"/api/chats/{chat_id}/summary", params={"revision": 1})
    assert stale.status_code == 409
    removed = client.delete(
        f"/api/chats/{chat_id}/summary", params={"revision": rev(client, chat_id)}
    )
    assert removed.status_code == 200 and removed.json()["current"] is None
    again = client.delete(
        f"/api/chats/{chat_id}/summary", params={"revision": rev(client, chat_id)}
    )
    assert again.status_code == 404


def test_summary_settings_keep_sillytavern_names(client: TestClient) -> None:
    settings = client.get("/api/summary-settings").json()
    assert settings["template"] == "[Summary: {{summary}}]" and settings["position"] == 0
    changed = client.put(
        "/api/summary-settings",
        json={"position": 1, "depth": 3, "promptInterval": 5, "hideCovered": True, "x": [1]},
    ).json()
    assert changed["position"] == 1 and changed["depth"] == 3 and changed["promptInterval"] == 5
    assert changed["hideCovered"] is True and changed["x"] == [1]
    assert client.get("/api/summary-settings").json() == changed
    bad = client.put("/api/summary-settings", json={"template": 5})
    assert bad.status_code == 400 or bad.status_code == 422
