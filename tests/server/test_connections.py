"""Connection endpoints against a local stub model server: add, list, test, models, default, remove."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.stubs.model_server import StubServer, start_stub


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with start_stub(key="sk-test-secret-1234", models=("stub-model", "stub-large")) as server:
        yield server


def test_add_list_test_models_default_remove(client: TestClient, stub: StubServer) -> None:
    body = {
        "name": "local",
        "api": "openai",
        "url": stub.base_url("openai"),
        "model": "stub-model",
        "key": "sk-test-secret-1234",
    }
    created = client.post("/api/connections", json=body)
    assert created.status_code == 201
    assert "sk-test-secret-1234" not in created.text
    listed = client.get("/api/connections").json()
    assert [c["name"] for c in listed] == ["local"]
    assert listed[0]["has_key"] is True and listed[0]["default"] is True
    assert "secret" not in client.get("/api/connections").text
    tested = client.post("/api/connections/local/test").json()
    assert tested["ok"] is True
    assert client.get("/api/connections/local/models").json() == ["stub-large", "stub-model"]
    changed = client.patch("/api/connections/local", json={"model": "stub-large"}).json()
    assert changed["model"] == "stub-large" and changed["has_key"] is True
    client.post("/api/connections", json={**body, "name": "second", "key": None})
    assert client.patch("/api/connections/second", json={"default": True}).json()["default"] is True
    assert [c["default"] for c in client.get("/api/connections").json()] == [False, True]
    assert client.delete("/api/connections/second").status_code == 204
    assert [c["name"] for c in client.get("/api/connections").json()] == ["local"]


def test_a_wrong_key_fails_the_test_without_showing_it(
    client: TestClient, stub: StubServer
) -> None:
    body = {
        "name": "bad",
        "api": "openai",
        "url": stub.base_url("openai"),
        "model": "stub-model",
        "key": "sk-wrong-9999",
    }
    client.post("/api/connections", json=body)
    tested = client.post("/api/connections/bad/test")
    assert tested.status_code == 200
    assert tested.json()["ok"] is False
    assert "sk-wrong-9999" not in tested.text


def test_bad_connection_input(client: TestClient) -> None:
    for body in (
        {"name": "x", "api": "nonsense"},
        {"name": "", "api": "openai"},
        {"name": "x", "api": "openai", "default": "yes"},
        {"api": "openai"},
    ):
        assert client.post("/api/connections", json=body).status_code == 422
    assert client.get("/api/connections").json() == []
    assert client.post("/api/connections/none/test").status_code == 404
    assert client.get("/api/connections/none/models").status_code == 404
    assert client.patch("/api/connections/none", json={"model": "m"}).status_code == 404
    assert client.delete("/api/connections/none").status_code == 404


def test_a_mistral_connection_is_added_and_tested(client: TestClient, stub: StubServer) -> None:
    body = {
        "name": "mistral",
        "api": "mistral",
        "url": stub.base_url("mistral"),
        "model": "stub-model",
        "key": "sk-test-secret-1234",
    }
    created = client.post("/api/connections", json=body)
    assert created.status_code == 201, created.text
    assert created.json()["api"] == "mistral"
    assert client.post("/api/connections/mistral/test").json()["ok"] is True
    assert client.delete("/api/connections/mistral").status_code == 204
