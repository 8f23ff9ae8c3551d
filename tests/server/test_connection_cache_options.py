"""A Claude connection's prompt cache options set over HTTP, as the page's editor sets them."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.stubs.model_server import StubServer


def test_the_cache_options_are_set_and_shown(client: TestClient, stub: StubServer) -> None:
    made = {"name": "sonnet", "api": "claude", "url": stub.base_url("anthropic"), "model": "m"}
    assert client.post("/api/connections", json=made).status_code == 201
    shown = next(c for c in client.get("/api/connections").json() if c["name"] == "sonnet")
    assert (shown["cache_system_prompt"], shown["caching_at_depth"]) == (False, -1)
    changed = client.patch(
        "/api/connections/sonnet", json={"cache_system_prompt": True, "caching_at_depth": 2}
    )
    assert changed.status_code == 200, changed.text
    body = changed.json()
    assert (body["cache_system_prompt"], body["caching_at_depth"]) == (True, 2)
    assert (body["url"], body["model"], body["api"]) == (made["url"], "m", "anthropic")
    off = client.patch("/api/connections/sonnet", json={"caching_at_depth": -1}).json()
    assert (off["cache_system_prompt"], off["caching_at_depth"]) == (True, -1)
    bad = client.patch("/api/connections/sonnet", json={"caching_at_depth": -5})
    assert bad.status_code == 422
