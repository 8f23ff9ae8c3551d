"""The inspector's next-prompt preview: a dry run over the process's one token-count cache."""

from __future__ import annotations

from fastapi.testclient import TestClient

from taverna.server.context import AppContext


def test_the_preview_counts_each_text_once_for_the_whole_process(
    client: TestClient, ctx: AppContext
) -> None:
    card = client.post(
        "/api/characters", json={"name": "Mira", "description": "A keeper.", "first_mes": "Hi."}
    ).json()
    chat_id = client.post("/api/chats", json={"character_id": card["id"]}).json()["id"]
    counts = ctx.generation.counts
    first = client.get(f"/api/chats/{chat_id}/prompt")
    assert first.status_code == 200
    assert counts.misses > 0
    misses = counts.misses
    again = client.get(f"/api/chats/{chat_id}/prompt")
    assert again.json()["prompt"] == first.json()["prompt"]
    assert counts.misses == misses and counts.hits > 0
