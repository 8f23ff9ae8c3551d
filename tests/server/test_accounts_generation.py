"""With accounts, a generation runs on what the chat's account chose: its connection (URL
and key), its persona, its cards. Each account here has its own model server on
127.0.0.1, speaking the real wire protocol; the server's own settings (the single user's)
point at a third one that must never be asked."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from taverna.errors import NotFound
from taverna.server.app import create_app
from taverna.server.context import AppContext
from tests.server.accounts_fixtures import enable_accounts, log_in
from tests.server.conftest import rev
from tests.stubs.model_server import Reply, StubServer, start_stub
from tests.support.api import stub_connection


@pytest.fixture
def servers() -> Iterator[dict[str, StubServer]]:
    with (
        start_stub(key="sk-alice-0001") as alice,
        start_stub(key="sk-bob-0002") as bob,
        start_stub(key="sk-server-0003") as decoy,
    ):
        yield {"alice": alice, "bob": bob, "": decoy}


def _finish(client: TestClient, task_id: str) -> list[tuple[str, dict]]:  # type: ignore[type-arg]
    seen = []
    with client.stream("GET", f"/api/tasks/{task_id}/events") as response:
        assert response.status_code == 200
        name = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: ") and name:
                seen.append((name, json.loads(line[6:])))
                if name in ("done", "error", "cancelled"):
                    break
    return seen


def _set_up(client: TestClient, who: str, stub: StubServer) -> str:
    """`who`'s connection (named alike for everyone), persona and character; a chat."""
    connection = stub_connection(stub, "Main", key=stub.key, default=True)
    assert client.post("/api/connections", json=connection).status_code == 201
    persona = {"name": f"{who}-persona", "description": f"PERSONA OF {who}", "is_default": True}
    assert client.post("/api/personas", json=persona).status_code == 201
    card = client.post(
        "/api/characters", json={"name": "Keeper", "description": f"CARD OF {who}"}
    ).json()
    return str(client.post("/api/chats", json={"character_id": card["id"]}).json()["id"])


def test_each_account_generates_with_its_own_connection_key_and_library(
    ctx: AppContext, servers: dict[str, StubServer]
) -> None:
    # The single user's connection and persona: never used for an account's chat.
    ctx.connections.add(
        "Main",
        "openai",
        url=servers[""].base_url("openai"),
        model="stub-model",
        key=servers[""].key,
        default=True,
    )
    enable_accounts(ctx, "alice", "bob")
    app = create_app(ctx)
    with TestClient(app) as alice, TestClient(app) as bob:
        clients = {"alice": alice, "bob": bob}
        chats = {}
        for who, client in clients.items():
            log_in(client, who)
            chats[who] = _set_up(client, who, servers[who])
        for who, client in clients.items():
            servers[who].script(Reply(tokens=[f"Reply for {who}."]))
            body = {
                "kind": "normal",
                "text": f"Hello from {who}",
                "revision": rev(client, chats[who]),
            }
            started = client.post(f"/api/chats/{chats[who]}/generate", json=body)
            assert started.status_code == 202, started.text
            seen = _finish(client, started.json()["task"]["id"])
            assert seen[-1][0] == "done", seen[-1]
            last = client.get(f"/api/chats/{chats[who]}").json()["messages"][-1]
            assert last["content"] == f"Reply for {who}."
        for who, other in (("alice", "bob"), ("bob", "alice")):
            asked = servers[who].requests
            assert [r.path for r in asked] == ["/v1/chat/completions"]
            assert asked[0].headers["authorization"] == f"Bearer {servers[who].key}"
            sent = json.dumps(asked[0].body)
            assert f"CARD OF {who}" in sent and f"PERSONA OF {who}" in sent
            assert f"Hello from {who}" in sent
            assert f"OF {other}" not in sent and f"from {other}" not in sent
            assert servers[who].problems == []
        assert servers[""].requests == []

        # The preview and the token count use the account's own connection too.
        for who, client in clients.items():
            shown = client.get(f"/api/chats/{chats[who]}/prompt").json()
            assert shown["request"]["url"].startswith(servers[who].url)
        assert servers[""].requests == []


def test_an_account_without_a_connection_is_told_so_not_given_the_servers(
    ctx: AppContext, servers: dict[str, StubServer]
) -> None:
    ctx.connections.add(
        "Main", "openai", url=servers[""].base_url("openai"), key=servers[""].key, default=True
    )
    enable_accounts(ctx, "carol")
    with TestClient(create_app(ctx)) as carol:
        log_in(carol, "carol")
        card = carol.post("/api/characters", json={"name": "Keeper"}).json()
        chat_id = carol.post("/api/chats", json={"character_id": card["id"]}).json()["id"]
        body = {"kind": "normal", "text": "Hi", "revision": rev(carol, chat_id)}
        refused = carol.post(f"/api/chats/{chat_id}/generate", json=body)
        assert refused.status_code == 404, refused.text
        named = carol.post(
            f"/api/chats/{chat_id}/generate",
            json={**body, "connection": "Main"},
        )
        assert named.status_code == 404, named.text
    assert servers[""].requests == []


class Oracle:
    """A plugin granted to call models and see keys."""

    TAVERNA_GRANTS = ("read_chats", "call_models", "see_keys")


def test_a_plugin_reaches_the_chats_accounts_connection(
    ctx: AppContext, servers: dict[str, StubServer]
) -> None:
    import asyncio

    ctx.connections.add(
        "Main", "openai", url=servers[""].base_url("openai"), key=servers[""].key, default=True
    )
    enable_accounts(ctx, "alice", "bob")
    app = create_app(ctx)
    with TestClient(app) as alice, TestClient(app) as bob:
        chats = {}
        for who, client in (("alice", alice), ("bob", bob)):
            log_in(client, who)
            chats[who] = _set_up(client, who, servers[who])
        oracle = ctx.plugins.register(Oracle(), "oracle")
        for who in ("alice", "bob"):
            # the host a plugin is handed with an event of this account's chat
            host = ctx.events.host(oracle, chats[who])
            assert host.api_key(chat_id=chats[who]) == servers[who].key
            assert host.api_key("Main", chat_id=chats[who]) == servers[who].key
            other = chats["bob" if who == "alice" else "alice"]
            with pytest.raises(NotFound):  # acting for one account, not for the other
                host.api_key(chat_id=other)
            servers[who].script(Reply(tokens=[f"Forecast for {who}."]))
            said = asyncio.run(host.generate(chats[who], "Forecast?"))
            assert said == f"Forecast for {who}."
            assert servers[who].requests[-1].headers["authorization"] == (
                f"Bearer {servers[who].key}"
            )
        # Without a chat, the server's own connection.
        host = ctx.events.host(oracle)
        assert host.api_key() == servers[""].key
        assert servers[""].requests == []
