"""The prompt inspector: the next prompt as a dry run over the process's one token-count
cache; a past reply's prompt as it was sent."""

from __future__ import annotations

import json
import time
from pathlib import Path

from fastapi.testclient import TestClient

from taverna.server.app import create_app
from taverna.server.cards import CharacterFields
from taverna.server.config import Limits, ServerConfig
from taverna.server.context import AppContext, open_context
from tests.stubs.model_server import Reply, StubServer
from tests.support.api import connect, events, generate, start_chat

# Regex keys that each stay within their 50 ms limit on LONG, 200 of them: without the
# turn's time for user regexes, opening such a chat took 10-40 s. The bound is loose.
TRAPS = tuple(f"/(a+)+$|q{i}z/" for i in range(200))
LONG = "a" * 5000 + "b"
BOUND = 10.0


def test_the_preview_counts_each_text_once_for_the_whole_process(
    client: TestClient, ctx: AppContext
) -> None:
    chat_id = start_chat(client, name="Mira", description="A keeper.", first_mes="Hi.")
    counts = ctx.generation.counts
    first = client.get(f"/api/chats/{chat_id}/prompt")
    assert first.status_code == 200
    assert counts.misses > 0
    misses = counts.misses
    again = client.get(f"/api/chats/{chat_id}/prompt")
    assert again.json()["prompt"] == first.json()["prompt"]
    assert counts.misses == misses and counts.hits > 0


def settled(ctx: AppContext) -> None:
    """Wait until the server has finished the follow-up of every generation."""
    deadline = time.monotonic() + 5
    while ctx.services.get("settling") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not ctx.services.get("settling")


def test_a_past_reply_shows_the_prompt_as_it_was_sent(
    client: TestClient, ctx: AppContext, stub: StubServer
) -> None:
    connect(client, stub)
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
    chat_id = start_chat(client, name="Mira", first_mes="Hi.")
    greeting = client.get(f"/api/chats/{chat_id}").json()["messages"][0]["id"]
    rebuilt = client.get(f"/api/chats/{chat_id}/messages/{greeting}/prompt").json()
    assert rebuilt["as_sent"] is False and rebuilt["prompt"]["ledger"]["items"]


def trapped_chat(client: TestClient) -> str:
    """A chat whose lorebook has 200 runaway regex keys, and a long message that sets them off."""
    entries = {
        str(i): {"uid": i, "key": [key], "content": f"trap {i}", "position": 0}
        for i, key in enumerate(TRAPS)
    }
    book = json.dumps({"entries": entries}).encode()
    imported = client.post(
        "/api/lorebooks/import", files={"file": ("Traps.json", book, "application/json")}
    )
    assert imported.status_code == 201, imported.text
    card = client.post("/api/characters", json={"name": "Mira", "first_mes": LONG}).json()
    client.put(
        f"/api/characters/{card['id']}/lorebook", json={"lorebook_id": imported.json()["id"]}
    )
    return str(client.post("/api/chats", json={"character_id": card["id"]}).json()["id"])


def test_the_preview_of_a_chat_with_two_hundred_runaway_keys_answers_soon(
    client: TestClient,
) -> None:
    chat_id = trapped_chat(client)
    began = time.perf_counter()
    preview = client.get(f"/api/chats/{chat_id}/prompt")
    assert time.perf_counter() - began < BOUND
    assert preview.status_code == 200
    ledger = preview.json()["prompt"]["ledger"]
    assert {n["source"] for n in ledger["skipped_regexes"]} == {
        f"Traps/{i}" for i in range(len(TRAPS))
    }
    reasons = {row["uid"]: row["reason"] for row in ledger["trace"]}
    assert all("stopped by a time limit" in reasons[i] for i in range(len(TRAPS)))


def test_the_inspector_lists_the_regexes_a_small_budget_skipped(tmp_path: Path) -> None:
    # The operator's server.toml: `[limits] regex_turn_seconds = 0.1`.
    ctx = open_context(tmp_path / "data", ServerConfig(limits=Limits(regex_turn_seconds=0.1)))
    with TestClient(create_app(ctx)) as client:
        chat_id = trapped_chat(client)
        notes = client.get(f"/api/chats/{chat_id}/prompt").json()["prompt"]["ledger"][
            "skipped_regexes"
        ]
    assert [n["pattern"] for n in notes] == list(TRAPS)
    skipped = [n for n in notes if n["reason"].startswith("not run")]
    assert len(skipped) >= len(TRAPS) - 10
    assert skipped[-1] == {
        "kind": "lorebook key",
        "source": f"Traps/{len(TRAPS) - 1}",
        "pattern": TRAPS[-1],
        "reason": "not run: this turn's 100 ms for user regexes was spent; counted as no match",
        "code": "regex_key_not_run",
        "params": {"ms": "100"},
        "count": 1,
    }


def book_chat(client: TestClient, name: str, greeting: str) -> str:
    """A chat whose character has a lorebook with one entry keyed on "lighthouse"."""
    entries = {
        "0": {"uid": 0, "key": ["lighthouse"], "content": "The light is red.", "position": 0}
    }
    imported = client.post(
        "/api/lorebooks/import",
        files={"file": ("Harbor Lore.json", json.dumps({"entries": entries}), "application/json")},
    )
    assert imported.status_code == 201, imported.text
    card = client.post("/api/characters", json={"name": name, "first_mes": greeting}).json()
    client.put(
        f"/api/characters/{card['id']}/lorebook", json={"lorebook_id": imported.json()["id"]}
    )
    return str(client.post("/api/chats", json={"character_id": card["id"]}).json()["id"])


def test_the_trace_names_the_books_scanned_when_nothing_matched(client: TestClient) -> None:
    quiet = book_chat(client, "Mira", "Hi.")
    ledger = client.get(f"/api/chats/{quiet}/prompt").json()["prompt"]["ledger"]
    assert ledger["trace"] == [] and ledger["scanned_books"] == ["Harbor Lore"]
    lit = book_chat(client, "Ione", "See the lighthouse?")
    ledger = client.get(f"/api/chats/{lit}/prompt").json()["prompt"]["ledger"]
    assert ledger["scanned_books"] == ["Harbor Lore"]
    assert [(t["book"], t["outcome"]) for t in ledger["trace"]] == [("Harbor Lore", "activated")]
    card = client.post("/api/characters", json={"name": "Bookless", "first_mes": "Hi."}).json()
    plain = client.post("/api/chats", json={"character_id": card["id"]}).json()["id"]
    assert (
        client.get(f"/api/chats/{plain}/prompt").json()["prompt"]["ledger"]["scanned_books"] == []
    )


def test_the_inspector_says_where_the_prompt_first_differs_from_the_last_replys(
    client: TestClient, ctx: AppContext, stub: StubServer
) -> None:
    connect(client, stub)
    chat_id = start_chat(
        client, name="Mira", description="Keeper of the old lamp. " * 10, first_mes="Hi."
    )
    stub.script(Reply(tokens=["The lamp ", "is lit."]))
    assert (
        events(client, generate(client, chat_id, kind="normal", text="Is it lit?")["task"]["id"])[
            -1
        ][0]
        == "done"
    )
    settled(ctx)
    first = client.get(f"/api/chats/{chat_id}").json()["messages"][-1]
    assert client.get(f"/api/chats/{chat_id}/messages/{first['id']}/prompt").json()["reuse"] is None
    upcoming = client.get(f"/api/chats/{chat_id}/prompt").json()["reuse"]
    # the next prompt adds the reply: everything before it is shared, nothing measured yet
    assert upcoming["previous_reply"] == first["id"] and not upcoming["measured"]
    assert 0 < upcoming["reused_tokens"] < upcoming["total_tokens"]
    assert upcoming["part"]["kind"] == "history"
    stub.script(Reply(tokens=["Always."]))
    assert (
        events(client, generate(client, chat_id, kind="normal", text="And at dawn?")["task"]["id"])[
            -1
        ][0]
        == "done"
    )
    settled(ctx)
    second = client.get(f"/api/chats/{chat_id}").json()["messages"][-1]
    past = client.get(f"/api/chats/{chat_id}/messages/{second['id']}/prompt").json()["reuse"]
    assert past["previous_reply"] == first["id"]
    assert past["shared_chars"] > 200 and past["part"]["kind"] == "history"
