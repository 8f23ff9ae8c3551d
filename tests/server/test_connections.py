"""Connection endpoints against a local stub model server: add, list, test, models, default, remove."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from taverna.server.context import AppContext
from tests.stubs.model_server import StubServer
from tests.support.api import stub_connection

pytestmark = pytest.mark.stub_model(key="sk-test-secret-1234", models=("stub-model", "stub-large"))


def test_add_list_test_models_default_remove(client: TestClient, stub: StubServer) -> None:
    body = stub_connection(stub, "local", key="sk-test-secret-1234")
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
    body = stub_connection(stub, "bad", key="sk-wrong-9999")
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


def test_bad_url_or_key_is_422_naming_the_field(client: TestClient) -> None:
    base = {"name": "x", "api": "openai"}
    for body, field in (
        ({**base, "url": "http://127.0.0.1:9/v1\x07"}, "url"),
        ({**base, "url": "http://127.0.0.1:9/v1\r\nX-Evil: 1"}, "url"),
        ({**base, "url": "file:///etc/passwd"}, "url"),
        ({**base, "url": "http://host:99999/"}, "url"),
        ({**base, "key": "sk-clé"}, "key"),
        ({**base, "key": "sk-a\nb"}, "key"),
    ):
        refused = client.post("/api/connections", json=body)
        assert refused.status_code == 422, (body, refused.text)
        assert refused.json()["detail"]["field"] == field
    assert client.get("/api/connections").json() == []


def test_key_env_names_only_what_the_server_allows(client: TestClient, ctx: AppContext) -> None:
    body = {"name": "env", "api": "openai", "url": "http://127.0.0.1:9/v1"}
    for variable in ("HOME", "TAVERNA_DATABASE_URL", "OPENAI_API_KEY"):
        refused = client.post("/api/connections", json={**body, "key_env": variable})
        assert refused.status_code == 422
        assert refused.json()["detail"]["field"] == "key_env"
        assert "allowed: none" in refused.json()["detail"]["message"]
    assert client.get("/api/connections").json() == []
    ctx.key_env_allowed = frozenset({"OPENAI_API_KEY"})
    allowed = client.post("/api/connections", json={**body, "key_env": "OPENAI_API_KEY"})
    assert allowed.status_code == 201 and allowed.json()["key"] == "from $OPENAI_API_KEY"
    assert client.post("/api/connections", json={**body, "key_env": "HOME"}).status_code == 422


def test_a_key_does_not_follow_its_connection_to_another_site(
    client: TestClient, ctx: AppContext, stub: StubServer
) -> None:
    body = {"name": "c", "api": "openai", "url": stub.base_url("openai"), "key": "sk-kept-5678"}
    assert client.post("/api/connections", json=body).status_code == 201
    elsewhere = "http://attacker.example:8080/v1"
    for change in (
        lambda: client.patch("/api/connections/c", json={"url": elsewhere}),
        lambda: client.post("/api/connections", json={**body, "url": elsewhere, "key": None}),
        lambda: client.patch(
            "/api/connections/c", json={"url": stub.url.replace("http:", "https:")}
        ),
        lambda: client.patch(
            "/api/connections/c", json={"url": stub.url.rsplit(":", 1)[0] + ":1/v1"}
        ),
    ):
        refused = change()
        assert refused.status_code == 422, refused.text
        assert refused.json()["detail"]["field"] == "key"
        assert "give the key again" in refused.json()["detail"]["message"]
    # Nothing changed: the connection still goes where its key was given for.
    (kept,) = client.get("/api/connections").json()
    assert kept["url"] == stub.base_url("openai") and kept["has_key"] is True
    # Another path on the same site keeps the key.
    same_site = client.patch("/api/connections/c", json={"url": stub.url + "/v1/"})
    assert same_site.status_code == 200 and same_site.json()["has_key"] is True
    # With a key for the new site, the move is made.
    moved = client.patch("/api/connections/c", json={"url": elsewhere, "key": "sk-new-0000"})
    assert moved.status_code == 200
    assert moved.json()["url"] == elsewhere and moved.json()["key"] == "…0000"
    # Or with the key removed.
    back = client.patch("/api/connections/c", json={"url": stub.base_url("openai"), "key": ""})
    assert back.status_code == 200 and back.json()["has_key"] is False
    # A key from the environment (set by the operator's command line) stays home too.
    ctx.connections.add("envkey", "openai", url=stub.base_url("openai"), key_env="HOME")
    refused = client.patch("/api/connections/envkey", json={"url": elsewhere})
    assert refused.status_code == 422 and refused.json()["detail"]["field"] == "key"
    refused = client.patch("/api/connections/envkey", json={"url": ""})  # the API's own URL
    assert refused.status_code == 422


def test_a_connection_named_with_a_slash_can_be_used_and_removed(
    client: TestClient, stub: StubServer
) -> None:
    name = "team/local model"
    body = {"name": name, "api": "openai", "url": stub.base_url("openai"), "model": "stub-model"}
    body["key"] = "sk-test-secret-1234"
    assert client.post("/api/connections", json=body).status_code == 201
    path = "/api/connections/" + quote(name, safe="")
    assert client.post(f"{path}/test").json()["ok"] is True
    assert client.get(f"{path}/models").json() == ["stub-large", "stub-model"]
    assert client.patch(path, json={"model": "stub-large"}).json()["model"] == "stub-large"
    assert client.delete(path).status_code == 204
    assert client.get("/api/connections").json() == []
