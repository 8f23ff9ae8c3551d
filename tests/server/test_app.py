"""The server shell: health, OpenAPI, the page's files, security headers."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fastapi.testclient import TestClient

from taverna.server.context import AppContext

WEB = Path(__file__).resolve().parents[2] / "taverna" / "web"


def test_health_and_user(client: TestClient) -> None:
    assert client.get("/api/health").json()["status"] == "ok"
    assert client.get("/api/me").json() == {"user": "", "mode": "single-user"}


def test_openapi_lists_the_api(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    assert "/api/chats/{chat_id}" in schema["paths"]
    assert "/api/chats/{chat_id}/messages/{node_id}/hidden" in schema["paths"]


def test_page_is_served_without_outside_resources(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert '<script type="module" src="/js/main.js">' in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    for path in WEB.rglob("*"):
        if path.suffix in {".js", ".css", ".html"}:
            text = path.read_text(encoding="utf-8")
            # A vendored file's comments (its licence, references) load nothing.
            if "vendor" in path.parts:
                text = re.sub(r"/\*[\s\S]*?\*/", "", text)
            assert not re.search(
                r"https?://(?!127\.0\.0\.1)", text.replace("http://www.w3.org", "")
            ), path
            assert client.get("/" + path.relative_to(WEB).as_posix()).status_code == 200


def test_every_catalog_key_used_by_the_page_exists_in_both_languages() -> None:
    en = json.loads((WEB / "i18n" / "en.json").read_text(encoding="utf-8"))
    zh = json.loads((WEB / "i18n" / "zh-CN.json").read_text(encoding="utf-8"))
    assert set(en) == set(zh)
    used: set[str] = set()
    for path in (WEB / "js").rglob("*.js"):
        used |= set(
            re.findall(r"\bt\(\s*\"([a-z_]+\.[A-Za-z_.]+)\"", path.read_text(encoding="utf-8"))
        )
    missing = sorted(k for k in used if k not in en)
    assert not missing, missing
    assert all(zh[k] for k in zh)


def test_unknown_api_path_is_404_json(client: TestClient) -> None:
    response = client.get("/api/nothing-here")
    assert response.status_code == 404


def test_writes_from_another_site_are_refused(client: TestClient) -> None:
    body = {"name": "x", "api": "openai"}
    refused = client.post("/api/connections", json=body, headers={"Origin": "https://evil.example"})
    assert refused.status_code == 403
    assert client.get("/api/connections").json() == []
    files = {"file": ("c.json", b'{"name": "A", "first_mes": "hi"}', "application/json")}
    assert (
        client.post(
            "/api/characters/import", files=files, headers={"Origin": "http://evil.example"}
        ).status_code
        == 403
    )
    assert client.get("/api/characters").json() == []
    same = client.post("/api/connections", json=body, headers={"Origin": "http://testserver"})
    assert same.status_code == 201


def test_loopback_server_answers_only_to_loopback_names(
    client: TestClient, ctx: AppContext
) -> None:
    ctx.allowed_hosts = frozenset({"127.0.0.1", "localhost", "::1"})
    assert client.get("/api/health", headers={"Host": "evil.example"}).status_code == 400
    assert client.get("/api/health", headers={"Host": "127.0.0.1:8000"}).status_code == 200
    assert client.get("/api/health", headers={"Host": "[::1]:8000"}).status_code == 200


def test_oversized_json_body_is_413(client: TestClient) -> None:
    huge = b'{"name": "' + b"x" * (17 * 1024 * 1024) + b'"}'
    response = client.post(
        "/api/personas", content=huge, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 413
    assert client.get("/api/personas").json() == []


def test_the_origin_check_compares_scheme_host_and_port(client: TestClient) -> None:
    body = {"name": "x", "api": "openai"}
    for origin in (
        "https://testserver",
        "http://testserver:8080",
        "ws://testserver",
        "null",
        "http://testserver.evil.example",
    ):
        refused = client.post("/api/connections", json=body, headers={"Origin": origin})
        assert refused.status_code == 403, origin
    assert client.get("/api/connections").json() == []
    for origin in ("http://testserver", "http://TESTSERVER:80"):
        allowed = client.post("/api/connections", json=body, headers={"Origin": origin})
        assert allowed.status_code == 201, origin
