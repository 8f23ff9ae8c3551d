"""The page's files: gzip for a browser that takes it, the same bytes as the file once
unpacked, a weak ETag that an unchanged file answers with "not modified"."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

WEB = Path(__file__).resolve().parents[2] / "taverna" / "web"


def test_text_files_come_gzipped_when_taken(client: TestClient) -> None:
    raw = (WEB / "i18n" / "en.json").read_bytes()
    packed = client.get("/i18n/en.json", headers={"Accept-Encoding": "gzip"})
    assert packed.status_code == 200
    assert packed.headers["content-encoding"] == "gzip"
    assert packed.headers["vary"] == "Accept-Encoding"
    assert packed.headers["cache-control"] == "no-cache"
    assert int(packed.headers["content-length"]) < len(raw) / 2
    assert packed.content == raw  # the client unpacks it: the same bytes
    plain = client.get("/i18n/en.json", headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers
    assert int(plain.headers["content-length"]) == len(raw)
    refused = client.get("/js/main.js", headers={"Accept-Encoding": "gzip;q=0, br"})
    assert "content-encoding" not in refused.headers


def test_an_unchanged_file_is_not_sent_again(client: TestClient) -> None:
    first = client.get("/css/app.css", headers={"Accept-Encoding": "gzip"})
    tag = first.headers["etag"]
    assert tag.startswith('W/"')
    again = client.get("/css/app.css", headers={"Accept-Encoding": "gzip", "If-None-Match": tag})
    assert again.status_code == 304
    assert again.content == b""
    plain = client.get(
        "/css/app.css", headers={"Accept-Encoding": "identity", "If-None-Match": tag}
    )
    assert plain.status_code == 304


def test_the_page_itself_comes_gzipped(client: TestClient) -> None:
    page = client.get("/", headers={"Accept-Encoding": "gzip"})
    assert page.status_code == 200
    assert '<script type="module" src="/js/main.js">' in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
