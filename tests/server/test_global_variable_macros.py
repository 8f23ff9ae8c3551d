"""Global variables set by prompt macros ({{setglobalvar}}, {{addglobalvar}}) are kept after
the reply is stored, as SillyTavern saves them; a preview (dry run) keeps nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.server.test_generation import events, generate
from tests.stubs.model_server import Reply, StubServer, start_stub


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with start_stub() as server:
        yield server


def test_macros_keep_global_variables_after_a_stored_reply(
    client: TestClient, stub: StubServer
) -> None:
    connection = {
        "name": "stub",
        "api": "openai",
        "url": stub.base_url("openai"),
        "model": "stub-model",
    }
    assert client.post("/api/connections", json=connection).status_code == 201
    card = client.post(
        "/api/characters",
        json={
            "name": "Wren",
            "description": "Visits before this one: {{getglobalvar::visits}}.",
            "personality": "{{addglobalvar::visits::1}}curious",
            "first_mes": "Hi.",
        },
    ).json()
    chat_id = client.post("/api/chats", json={"character_id": card["id"]}).json()["id"]
    assert client.get(f"/api/chats/{chat_id}/prompt").status_code == 200  # a preview
    assert client.get("/api/variables").json() == {}
    for visit in (1, 2):
        stub.script(Reply(tokens=["Hello again."]))
        started = generate(client, chat_id, kind="normal", text="Hello")
        assert events(client, started["task"]["id"])[-1][0] == "done"
        assert client.get("/api/variables").json() == {"visits": visit}
        # the next turn's prompt reads what the last stored turn kept
        sent = " ".join(m["content"] for m in stub.requests[-1].body["messages"])
        before = "" if visit == 1 else str(visit - 1)
        assert f"Visits before this one: {before}." in sent, sent
