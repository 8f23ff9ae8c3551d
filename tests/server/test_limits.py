"""Request size limits: every body is counted as it arrives, whatever its framing, and a
body over its route's limit is answered 413 with words, having read no more than the limit."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from taverna.errors import FormatError
from taverna.server.app import FOLDER_FRAMING, UPLOAD_FRAMING, TavernaApp, create_app
from taverna.server.config import CONFIG_FILE, ServerConfig, load_config
from taverna.server.context import AppContext

MIB = 1024 * 1024
CHUNK = 64 * 1024


def multipart_head(boundary: str, field: str, filename: str) -> bytes:
    return (
        f"--{boundary}\r\n"
        f'Content-Disposition: form-data; name="{field}"; filename="{filename}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()


class Sender:
    """An ASGI client that streams a body of `size` bytes in chunks, counting how much of it
    the server pulled, and keeps what the server answered."""

    def __init__(self, head: bytes, size: int) -> None:
        self.head = head
        self.size = size
        self.pulled = 0
        self.status = 0
        self.body = b""

    def chunks(self) -> Iterator[bytes]:
        yield self.head
        filler = b"x" * CHUNK
        left = self.size - len(self.head)
        while left > 0:
            piece = filler[: min(CHUNK, left)]
            left -= len(piece)
            yield piece

    async def run(
        self, app: Any, method: str, path: str, headers: list[tuple[bytes, bytes]]
    ) -> None:
        source = self.chunks()
        pending = next(source, None)

        async def receive() -> dict[str, Any]:
            nonlocal pending
            if pending is None:
                await asyncio.sleep(3600)  # the body is over: wait for a disconnect
            piece, pending = pending, next(source, None)
            assert piece is not None
            self.pulled += len(piece)
            return {"type": "http.request", "body": piece, "more_body": pending is not None}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                self.status = message["status"]
            elif message["type"] == "http.response.body":
                self.body += message.get("body", b"")

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [(b"host", b"testserver"), *headers],
            "client": ("127.0.0.1", 5000),
            "server": ("127.0.0.1", 8000),
        }
        await app(scope, receive, send)


BOUNDARY = "taverna-test-boundary"
MULTIPART = (b"content-type", f"multipart/form-data; boundary={BOUNDARY}".encode())
CHUNKED = (b"transfer-encoding", b"chunked")


@pytest.fixture
def small(ctx: AppContext) -> AppContext:
    ctx.body_limit = 1 * MIB
    ctx.upload_limit = 2 * MIB
    ctx.folder_upload_limit = 3 * MIB
    return ctx


CASES = {
    # (method, path, headers, head of the body, the limit that applies)
    "chunked JSON": (
        "POST",
        "/api/personas",
        [CHUNKED, (b"content-type", b"application/json")],
        b'{"name": "',
        "body",
    ),
    "chunked, no content type": ("POST", "/api/personas", [CHUNKED], b'{"name": "', "body"),
    "plain text": ("POST", "/api/chats", [CHUNKED, (b"content-type", b"text/plain")], b"", "body"),
    "card upload": (
        "POST",
        "/api/characters/import",
        [CHUNKED, MULTIPART],
        multipart_head(BOUNDARY, "file", "c.png"),
        "upload",
    ),
    "avatar upload": (
        "POST",
        "/api/personas/x/avatar",
        [CHUNKED, MULTIPART],
        multipart_head(BOUNDARY, "file", "a.png"),
        "upload",
    ),
    "lorebook upload": (
        "POST",
        "/api/lorebooks/import",
        [CHUNKED, MULTIPART],
        multipart_head(BOUNDARY, "file", "w.json"),
        "upload",
    ),
    "preset upload": (
        "POST",
        "/api/presets/import",
        [CHUNKED, MULTIPART],
        multipart_head(BOUNDARY, "file", "p.json"),
        "upload",
    ),
    "folder upload": (
        "POST",
        "/api/import/sillytavern",
        [CHUNKED, MULTIPART],
        multipart_head(BOUNDARY, "files", "u/characters/a.png"),
        "folder",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_body_over_its_limit_is_refused_having_read_no_more(small: AppContext, case: str) -> None:
    method, path, headers, head, which = CASES[case]
    limit = {
        "body": small.body_limit,
        "upload": small.upload_limit + UPLOAD_FRAMING,
        "folder": small.folder_upload_limit + FOLDER_FRAMING,
    }[which]
    app = create_app(small)
    sender = Sender(head, 200 * MIB)
    asyncio.run(sender.run(app, method, path, headers))
    assert sender.status == 413, (case, sender.status, sender.body[:300])
    # Read as it came, stopped at the limit: never the whole 200 MiB.
    assert sender.pulled <= limit + CHUNK, (case, sender.pulled)
    detail = json.loads(sender.body)["detail"]
    assert detail["kind"] == "PayloadTooLarge"
    assert "larger than" in detail["message"]


@pytest.mark.parametrize(
    ("method", "path"), [("DELETE", "/api/personas/nope"), ("POST", "/api/nothing-here")]
)
def test_a_route_that_reads_no_body_leaves_it_unread(
    small: AppContext, method: str, path: str
) -> None:
    sender = Sender(b"", 200 * MIB)
    asyncio.run(sender.run(create_app(small), method, path, [CHUNKED]))
    assert sender.status in (404, 405)  # its own answer: nothing was read to refuse
    assert sender.pulled <= CHUNK


@pytest.mark.parametrize(
    ("path", "limit"),
    [
        ("/api/personas", "1 MiB"),
        ("/api/personas/x", "1 MiB"),
        ("/api/characters/import", "3 MiB"),
        ("/api/import/sillytavern", "67 MiB"),
    ],
)
def test_a_declared_length_over_the_limit_is_refused_before_reading(
    small: AppContext, path: str, limit: str
) -> None:
    app = create_app(small)
    sender = Sender(b"", 200 * MIB)
    headers = [(b"content-length", str(200 * MIB).encode()), (b"content-type", b"application/json")]
    asyncio.run(sender.run(app, "POST", path, headers))
    assert sender.status == 413
    assert sender.pulled == 0
    assert (
        f"larger than the {limit} this server reads" in json.loads(sender.body)["detail"]["message"]
    )


def test_a_body_under_the_limit_still_works(client: TestClient, small: AppContext) -> None:
    # The app's limits are those the context had when the app was built.
    body = {"name": "Wren", "description": "x" * (MIB // 2)}
    response = client.post("/api/personas", json=body)
    assert response.status_code == 201, response.text


def test_every_upload_route_has_the_upload_limit(ctx: AppContext) -> None:
    """A route that takes files reads more than a JSON body: it is mounted with the upload
    limit (the folder import with its own), and every other route with the app's."""
    app = create_app(ctx)
    assert isinstance(app, TavernaApp)
    uploads = 0
    for path, operations in app.openapi()["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {})
            scope = {
                "type": "http",
                "method": method.upper(),
                "path": re.sub(r"\{[^}]+\}", "x", path),
            }
            if path == "/api/import/sillytavern":
                expected = ctx.folder_upload_limit + FOLDER_FRAMING
            elif "multipart/form-data" in content:
                expected = ctx.upload_limit + UPLOAD_FRAMING
                uploads += 1
            else:
                expected = ctx.body_limit
            assert app.body_limit_of(scope) == expected, (path, method)
    assert uploads == 12  # the chat file import, backgrounds, themes and sprites among them


def test_limits_come_from_the_config(tmp_path: Path) -> None:
    (tmp_path / CONFIG_FILE).write_text(
        "[limits]\nbody_mib = 2\nupload_mib = 8\nfolder_upload_mib = 100\nfolder_files = 50\n"
    )
    config = load_config(None, tmp_path)
    assert config.limits.body == 2 * MIB and config.limits.upload == 8 * MIB
    assert config.limits.folder_upload == 100 * MIB and config.limits.folder_files == 50
    assert load_config(None, tmp_path / "elsewhere") == ServerConfig()
    (tmp_path / CONFIG_FILE).write_text("[limits]\nbody_mb = 2\n")
    with pytest.raises(FormatError) as bad:
        load_config(None, tmp_path)
    assert bad.value.field == "limits.body_mb" and bad.value.file
    with pytest.raises(FormatError):
        load_config(tmp_path / "missing.toml", tmp_path)
