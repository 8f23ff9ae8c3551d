"""Setting up through the server's HTTP API, and reading its task events, as a page does."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient

from tests.stubs.model_server import StubServer


def rev(client: TestClient, chat_id: str) -> int:
    """The chat's revision as a page reads it, to name in a write."""
    return int(client.get(f"/api/chats/{chat_id}").json()["revision"])


def stub_connection(stub: StubServer, name: str = "stub", **fields: object) -> dict[str, Any]:
    """The body that adds the stub's OpenAI API as connection `name` (model `stub-model`),
    with `fields` added or replaced."""
    return {
        "name": name,
        "api": "openai",
        "url": stub.base_url("openai"),
        "model": "stub-model",
        **fields,
    }


def connect(client: TestClient, stub: StubServer) -> None:
    """Add the stub's OpenAI API as the connection "stub" (the default while it is the only one)."""
    assert client.post("/api/connections", json=stub_connection(stub)).status_code == 201


def start_chat(client: TestClient, **card: Any) -> str:
    """Make a character of `card`'s fields and start a chat with it: the chat's id."""
    made = client.post("/api/characters", json=card).json()
    return str(client.post("/api/chats", json={"character_id": made["id"]}).json()["id"])


def events(client: TestClient, task_id: str, **headers: str) -> list[tuple[str, dict]]:  # type: ignore[type-arg]
    """Every SSE event of a task until it ends."""
    out = []
    with client.stream("GET", f"/api/tasks/{task_id}/events", headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        name = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: ") and name:
                out.append((name, json.loads(line[6:])))
                if name in ("done", "error", "cancelled"):
                    break
    return out


def generate(client: TestClient, chat_id: str, **body: object) -> dict:  # type: ignore[type-arg]
    """Start a generation at the chat's revision as read now (or the one given)."""
    body.setdefault("revision", rev(client, chat_id))
    response = client.post(f"/api/chats/{chat_id}/generate", json=body)
    assert response.status_code == 202, response.text
    return response.json()  # type: ignore[no-any-return]
