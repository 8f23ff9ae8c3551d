"""Connections made from a source by name over the HTTP API: the list of sources, a source's
URL and rules kept with the connection, and its models with their context sizes."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.stubs.model_server import StubServer

pytestmark = pytest.mark.stub_model(key="sk-or-test-1", models=("or/small", "or/large"))


def test_the_sources_list_names_every_service_and_which_are_gone(client: TestClient) -> None:
    listed = {s["name"]: s for s in client.get("/api/connections/sources").json()}
    assert listed["openrouter"]["url"] == "https://openrouter.ai/api/v1"
    assert listed["openrouter"]["family"] == "chat" and listed["ooba"]["family"] == "text"
    assert listed["deepseek"]["post_processing"] == "semi"
    assert listed["custom"]["needs_url"] is True
    assert {n for n, s in listed.items() if s["gone"]} == {"windowai", "scale", "blockentropy"}
    refused = client.post("/api/connections", json={"name": "w", "api": "windowai"})
    assert refused.status_code == 422


def test_an_openrouter_connection_lists_models_with_context_sizes(
    client: TestClient, stub: StubServer
) -> None:
    stub.context_lengths = {"or/large": 200000}
    body = {
        "name": "router",
        "api": "openrouter",
        "url": stub.base_url("openai"),
        "model": "or/large",
        "key": stub.key,
    }
    created = client.post("/api/connections", json=body).json()
    assert (created["api"], created["source"]) == ("openai-compatible", "openrouter")
    sizes = client.get("/api/connections/router/model-sizes").json()
    assert sizes == [{"id": "or/large", "context": 200000}, {"id": "or/small", "context": None}]
    assert client.get("/api/connections/router/models").json() == ["or/large", "or/small"]


def test_a_deepseek_connection_takes_its_url_and_semi_post_processing(client: TestClient) -> None:
    created = client.post(
        "/api/connections", json={"name": "ds", "api": "deepseek", "model": "deepseek-chat"}
    ).json()
    assert created["url"] == "https://api.deepseek.com/beta"
    assert (created["post_processing"], created["source"]) == ("semi", "deepseek")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_test_button_says_which_part_failed(client: TestClient, stub: StubServer) -> None:
    cases = {
        "wrong-key": {"url": stub.base_url("openai"), "model": "or/small", "key": "sk-nope"},
        "no-model": {"url": stub.base_url("openai"), "model": "nonesuch", "key": stub.key},
        "nobody": {"url": f"http://127.0.0.1:{_free_port()}/v1", "model": "m"},
    }
    parts = {}
    for name, fields in cases.items():
        added = client.post("/api/connections", json={"name": name, "api": "openrouter", **fields})
        assert added.status_code == 201, added.text
        tested = client.post(f"/api/connections/{name}/test").json()
        assert tested["ok"] is False
        parts[name] = tested["part"]
    assert parts == {"wrong-key": "auth", "no-model": "model", "nobody": "refused"}


def test_dns_and_tls_failures_are_named_from_the_outbound_words() -> None:
    from taverna.services.connections.probe import failed_part

    assert (
        failed_part("network", "the name in https://x.invalid could not be resolved (DNS)") == "dns"
    )
    assert failed_part("network", "the TLS certificate of https://x was not accepted") == "tls"
    assert failed_part("server", "HTTP 500") == "api"
