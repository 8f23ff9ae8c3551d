"""The prompt inspector: the next prompt as a dry run over the process's one token-count
cache; a past reply's prompt as it was sent."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from taverna.server.cards import CharacterFields
from taverna.server.context import AppContext
from tests.server.test_generation import events, generate
from tests.stubs.model_server import Reply, StubServer, start_stub


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


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with start_stub() as server:
        yield server


def settled(ctx: AppContext) -> None:
    """Wait until the server has finished the follow-up of every generation."""
    deadline = time.monotonic() + 5
    while ctx.services.get("settling") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not ctx.services.get("settling")


def test_a_past_reply_shows_the_prompt_as_it_was_sent(
    client: TestClient, ctx: AppContext, stub: StubServer
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
        json={"name": "Mira", "description": "Keeper of the old lamp.", "first_mes": "Hi."},
    ).json()
    chat_id = client.post("/api/chats", json={"character_id": card["id"]}).json()["id"]
    stub.script(Reply(tokens=["The lamp ", "is lit."]))
    started = generate(client, chat_id, kind="normal", text="Is it lit?")
    assert events(client, started["task"]["id"])[-1][0] == "done"
    settled(ctx)
    sent_body = stub.requests[-1].body
    reply = client.get(f"/api/chats/{chat_id}").json()["messages"][-1]
    assert reply["content"] == "The lamp is lit."

    # The card changes afterwards: the next prompt has the new text, the past one the old.
    edited = dict(card, description="Keeper of the new lamp.")
    for key in ("id", "revision", "avatar_url", "lorebook_id", "created", "updated"):
        edited.pop(key, None)
    fields = {k: v for k, v in edited.items() if k in CharacterFields.model_fields}
    assert client.put(f"/api/characters/{card['id']}", json=fields).status_code == 200
    past = client.get(f"/api/chats/{chat_id}/messages/{reply['id']}/prompt").json()
    assert past["as_sent"] is True
    assert past["request"]["body"] == sent_body
    said = " ".join(m["content"] for m in past["prompt"]["messages"])
    assert "old lamp" in said and "new lamp" not in said
    assert past["prompt"]["ledger"]["items"]
    upcoming = client.get(f"/api/chats/{chat_id}/prompt").json()
    assert upcoming["as_sent"] is False
    assert "new lamp" in " ".join(m["content"] for m in upcoming["prompt"]["messages"])


def test_a_reply_without_a_record_gets_its_prompt_built_again(
    client: TestClient, ctx: AppContext
) -> None:
    card = client.post("/api/characters", json={"name": "Mira", "first_mes": "Hi."}).json()
    chat_id = client.post("/api/chats", json={"character_id": card["id"]}).json()["id"]
    greeting = client.get(f"/api/chats/{chat_id}").json()["messages"][0]["id"]
    rebuilt = client.get(f"/api/chats/{chat_id}/messages/{greeting}/prompt").json()
    assert rebuilt["as_sent"] is False and rebuilt["prompt"]["ledger"]["items"]
