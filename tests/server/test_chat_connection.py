"""A chat's own connection and model: chosen in one chat, remembered with it, used by every
kind of turn there (send, regenerate, continue, impersonate, edit-and-resend, group
rounds), while the default connection and the other chats stay as they were. Two stub
model servers on 127.0.0.1 tell which connection a request went to."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.server.conftest import rev
from tests.stubs.model_server import StubServer, start_stub
from tests.support.api import events, generate, stub_connection


@pytest.fixture(scope="module")
def home() -> Iterator[StubServer]:
    """The default connection's server."""
    with start_stub() as server:
        yield server


@pytest.fixture(scope="module")
def away() -> Iterator[StubServer]:
    """The server of the connection one chat chooses, with a second model."""
    with start_stub(models=("stub-model", "big-model")) as server:
        yield server


@pytest.fixture
def connected(client: TestClient, home: StubServer, away: StubServer) -> None:
    for name, server, default in (("home", home, True), ("away", away, False)):
        body = stub_connection(server, name, default=default)
        assert client.post("/api/connections", json=body).status_code == 201


def _chat(client: TestClient) -> str:
    """A new chat with Mira (the card made on first use)."""
    cards = [c for c in client.get("/api/characters").json() if c["name"] == "Mira"]
    card = (
        cards[0]
        if cards
        else client.post(
            "/api/characters", json={"name": "Mira", "description": "A keeper.", "first_mes": "Hi."}
        ).json()
    )
    return str(client.post("/api/chats", json={"character_id": card["id"]}).json()["id"])


def _choose(client: TestClient, chat_id: str, **body: object) -> dict:  # type: ignore[type-arg]
    body.setdefault("revision", rev(client, chat_id))
    answer = client.put(f"/api/chats/{chat_id}/connection", json=body)
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def _models_asked(server: StubServer, since: int) -> list[str]:
    return [str(r.body["model"]) for r in server.requests[since:] if isinstance(r.body, dict)]


def _finished(client: TestClient, started: dict) -> str:  # type: ignore[type-arg]
    return events(client, started["task"]["id"])[-1][0]


@pytest.mark.usefixtures("connected")
def test_every_turn_of_a_chat_goes_to_its_own_connection_and_model(
    client: TestClient, home: StubServer, away: StubServer
) -> None:
    chat_id = _chat(client)
    chosen = _choose(client, chat_id, connection="away", model="big-model")
    assert chosen["connection"] == {"name": "away", "model": "big-model"}
    # remembered with the chat: a reload reads it back
    assert client.get(f"/api/chats/{chat_id}").json()["connection"] == chosen["connection"]
    before_home, before_away = len(home.requests), len(away.requests)

    assert _finished(client, generate(client, chat_id, kind="normal", text="Hello?")) == "done"
    assert _finished(client, generate(client, chat_id, kind="regenerate")) == "done"
    assert _finished(client, generate(client, chat_id, kind="continue")) == "done"
    assert _finished(client, generate(client, chat_id, kind="impersonate")) == "done"
    question = client.get(f"/api/chats/{chat_id}").json()["messages"][-2]
    resent = client.post(
        f"/api/chats/{chat_id}/messages/{question['id']}/resend",
        json={"content": "Hello again?", "revision": rev(client, chat_id)},
    )
    assert resent.status_code == 202, resent.text
    assert _finished(client, resent.json()) == "done"

    assert _models_asked(away, before_away) == ["big-model"] * 5
    assert len(home.requests) == before_home  # the default connection was never called
    # the choice changed neither the connection itself nor the default
    listed = {c["name"]: c for c in client.get("/api/connections").json()}
    assert listed["away"]["model"] == "stub-model" and not listed["away"]["default"]
    assert listed["home"]["default"]


@pytest.mark.usefixtures("connected")
def test_other_chats_keep_the_default_and_a_chat_can_follow_it_again(
    client: TestClient, home: StubServer, away: StubServer
) -> None:
    mine, other = _chat(client), _chat(client)
    _choose(client, mine, connection="away")
    assert client.get(f"/api/chats/{other}").json()["connection"] is None
    before_home, before_away = len(home.requests), len(away.requests)
    assert _finished(client, generate(client, other, kind="normal", text="Hi")) == "done"
    assert _finished(client, generate(client, mine, kind="normal", text="Hi")) == "done"
    # no model chosen: the connection's own
    assert _models_asked(home, before_home) == ["stub-model"]
    assert _models_asked(away, before_away) == ["stub-model"]

    # a turn may still name a connection for itself, without changing the chat's choice
    before_home = len(home.requests)
    named = generate(client, mine, kind="normal", text="Once", connection="home")
    assert _finished(client, named) == "done"
    assert len(home.requests) == before_home + 1
    assert client.get(f"/api/chats/{mine}").json()["connection"]["name"] == "away"

    followed = _choose(client, mine, connection=None)
    assert followed["connection"] is None
    before_home = len(home.requests)
    assert _finished(client, generate(client, mine, kind="normal", text="Back")) == "done"
    assert len(home.requests) == before_home + 1


@pytest.mark.usefixtures("connected")
def test_a_missing_connection_is_refused_and_nothing_changes(client: TestClient) -> None:
    chat_id = _chat(client)
    _choose(client, chat_id, connection="away", model="big-model")
    revision = rev(client, chat_id)
    refused = client.put(
        f"/api/chats/{chat_id}/connection", json={"connection": "nope", "revision": revision}
    )
    assert refused.status_code == 404
    assert refused.json()["detail"]["code"] == "no_connection_named"
    shown = client.get(f"/api/chats/{chat_id}").json()
    assert shown["connection"] == {"name": "away", "model": "big-model"}
    assert shown["revision"] == revision


@pytest.mark.usefixtures("connected")
def test_a_deleted_connection_falls_back_to_the_default(
    client: TestClient, home: StubServer
) -> None:
    extra = {"name": "gone", "api": "openai", "url": home.base_url("openai"), "model": "x"}
    assert client.post("/api/connections", json=extra).status_code == 201
    chat_id = _chat(client)
    _choose(client, chat_id, connection="gone")
    assert client.delete("/api/connections/gone").status_code == 204
    before = len(home.requests)
    assert _finished(client, generate(client, chat_id, kind="normal", text="Hi")) == "done"
    assert _models_asked(home, before) == ["stub-model"]


def _round_done(client: TestClient, round_id: str) -> dict:  # type: ignore[type-arg]
    for _ in range(300):
        found = client.get(f"/api/rounds/{round_id}").json()
        if found["done"]:
            return found  # type: ignore[no-any-return]
        time.sleep(0.02)
    raise AssertionError("the round did not end")


@pytest.mark.usefixtures("connected")
def test_a_group_round_and_its_resend_go_to_the_chat_connection(
    client: TestClient, home: StubServer, away: StubServer
) -> None:
    ids = [
        client.post("/api/characters", json={"name": n, "first_mes": f"{n} waves."}).json()["id"]
        for n in ("Mira", "Élodie")
    ]
    group = client.post(
        "/api/groups",
        json={"name": "Harbour", "character_ids": ids, "activation_strategy": "list"},
    ).json()
    chat_id = client.post(f"/api/groups/{group['id']}/chats", json={}).json()["id"]
    _choose(client, chat_id, connection="away", model="big-model")
    before_home, before_away = len(home.requests), len(away.requests)
    body = client.post(
        f"/api/chats/{chat_id}/round", json={"text": "Hi", "revision": rev(client, chat_id)}
    ).json()
    _round_done(client, body["round"]["id"])
    question = next(
        m for m in client.get(f"/api/chats/{chat_id}").json()["messages"] if m["role"] == "user"
    )
    resent = client.post(
        f"/api/chats/{chat_id}/messages/{question['id']}/resend",
        json={"content": "Hello again", "revision": rev(client, chat_id)},
    )
    assert resent.status_code == 202, resent.text
    _round_done(client, resent.json()["round"]["id"])
    assert _models_asked(away, before_away) == ["big-model"] * 4
    assert len(home.requests) == before_home
