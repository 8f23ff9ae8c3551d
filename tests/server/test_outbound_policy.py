"""With accounts, the connections and embeddings endpoints of people who are not admins
reach public addresses only, unless the operator allows more (`outbound_allow` in
server.toml); admins and the single user of a server without accounts are not policed.
Over the HTTP API, against model servers on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from taverna.errors import FormatError
from taverna.providers.outbound import OutboundPolicy
from taverna.server.app import create_app
from taverna.server.config import load_config
from taverna.server.context import AppContext
from tests.providers.test_outbound import BANNER, banner_server
from tests.server import test_recall_keys
from tests.server.accounts_fixtures import enable_accounts, log_in
from tests.stubs.embeddings_server import embeddings_stub
from tests.stubs.model_server import Reply, StubServer, start_stub

# The server over SQLite, and over PostgreSQL when its URL is set.
ctx = test_recall_keys.ctx


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with start_stub(key="sk-stub-0001") as server:
        yield server


def _port(url: str) -> int:
    return int(url.split(":")[2].split("/")[0])


def _connection(client: TestClient, url: str, name: str = "Mine") -> None:
    body = {"name": name, "api": "openai", "url": url, "model": "stub-model", "key": "sk-stub-0001"}
    added = client.post("/api/connections", json=body)
    assert added.status_code == 201, added.text


def _test(client: TestClient, name: str = "Mine") -> dict[str, object]:
    answer = client.post(f"/api/connections/{name}/test")
    assert answer.status_code == 200, answer.text
    result: dict[str, object] = answer.json()
    return result


def test_a_non_admins_connection_to_loopback_is_refused_unless_allowed(
    ctx: AppContext, stub: StubServer
) -> None:
    enable_accounts(ctx, "bob", admin="root", outbound_allow=())
    with TestClient(create_app(ctx)) as client:
        log_in(client, "bob")
        _connection(client, stub.base_url("openai"))
        refused = _test(client)
        assert refused["ok"] is False
        message = str(refused["message"])
        assert "not sent" in message and "outbound_allow" in message
        listed = client.get("/api/connections/Mine/models")
        assert listed.status_code == 502 and "not sent" in listed.text
        # A name that resolves to 127.0.0.1, and another loopback address, are refused too.
        _connection(client, stub.base_url("openai").replace("127.0.0.1", "localhost"), "Named")
        assert "not sent" in str(_test(client, "Named")["message"])
        _connection(client, stub.base_url("openai").replace("127.0.0.1", "127.0.0.2"), "Two")
        assert "not sent" in str(_test(client, "Two")["message"])
        assert stub.requests == []

        # The operator allows the model server's address and port: it goes through.
        assert ctx.outbound is not None
        ctx.outbound.policy = OutboundPolicy.of([f"127.0.0.1:{_port(stub.base_url('openai'))}"])
        stub.script(Reply(tokens=["OK"]))
        assert _test(client)["ok"] is True
        assert len(stub.requests) == 1


def test_admins_and_the_single_user_are_not_policed(ctx: AppContext, stub: StubServer) -> None:
    with TestClient(create_app(ctx)) as single:
        _connection(single, stub.base_url("openai"))
        stub.script(Reply(tokens=["OK"]))
        assert _test(single)["ok"] is True
    enable_accounts(ctx, "bob", admin="root", outbound_allow=())
    with TestClient(create_app(ctx)) as root:
        log_in(root, "root")
        _connection(root, stub.base_url("openai"))
        stub.script(Reply(tokens=["OK"]))
        assert _test(root)["ok"] is True
    assert len(stub.requests) == 2


def test_a_generation_of_a_non_admin_to_loopback_fails_with_the_reason(
    ctx: AppContext, stub: StubServer
) -> None:
    enable_accounts(ctx, "bob", admin="root", outbound_allow=())
    with TestClient(create_app(ctx)) as client:
        log_in(client, "bob")
        _connection(client, stub.base_url("openai"))
        card = client.post("/api/characters", json={"name": "Keeper"}).json()
        chat = client.post("/api/chats", json={"character_id": card["id"]}).json()
        revision = client.get(f"/api/chats/{chat['id']}").json()["revision"]
        started = client.post(
            f"/api/chats/{chat['id']}/generate",
            json={"kind": "normal", "text": "hello", "revision": revision},
        )
        assert started.status_code == 202, started.text
        task = started.json()["task"]["id"]
        with client.stream("GET", f"/api/tasks/{task}/events") as events:
            text = "".join(events.iter_text())
        assert "event: error" in text and "not sent" in text
    assert stub.requests == []


def test_a_non_admins_embeddings_endpoint_on_loopback_is_refused(ctx: AppContext) -> None:
    enable_accounts(ctx, "bob", admin="root", outbound_allow=())
    with embeddings_stub() as own:
        owner = ctx.store.account(name="bob").id
        from taverna.services.memory.recall import stored_config
        from taverna.services.memory.recall_settings import change_recall_settings

        settings = {"source": "openai", "alt_endpoint_url": own.url, "openai_model": "emb"}
        change_recall_settings(ctx.store, {**settings, "enabled_chats": True}, owner)
        assert ctx.turns is not None
        embedder = ctx.turns.recall.embedder(stored_config(ctx.store, owner))
        with pytest.raises(Exception, match="not sent"):
            embedder.embed(["hello"])
        assert own.requests == []


def test_a_peer_that_is_not_http_is_not_quoted_over_the_api(ctx: AppContext) -> None:
    with banner_server() as port, TestClient(create_app(ctx)) as client:
        _connection(client, f"http://127.0.0.1:{port}/v1")
        result = _test(client)
        assert result["ok"] is False
        listed = client.get("/api/connections/Mine/models")
        for said in (str(result), listed.text):
            assert BANNER.decode().split()[0] not in said and "secret-banner" not in said, said


def test_a_wrong_outbound_allow_entry_stops_the_start_naming_it(tmp_path: Path) -> None:
    config = tmp_path / "server.toml"
    config.write_text('outbound_allow = ["127.0.0.1:5001", "the-database"]\n', encoding="utf-8")
    with pytest.raises(FormatError) as stopped:
        load_config(config, tmp_path)
    assert stopped.value.field == "outbound_allow"
    assert "the-database" in stopped.value.message
    config.write_text('outbound_allow = ["127.0.0.1:5001", "10.0.0.0/8"]\n', encoding="utf-8")
    assert load_config(config, tmp_path).outbound_allow == ("127.0.0.1:5001", "10.0.0.0/8")
