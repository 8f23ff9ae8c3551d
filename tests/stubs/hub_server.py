"""A stand-in for the Hugging Face hub on 127.0.0.1, speaking its file protocol.

| request | answer |
|---|---|
| `HEAD /{owner}/{name}/resolve/{revision}/{file}` | 200 with `X-Repo-Commit`, `ETag`, `X-Linked-Etag` and `X-Linked-Size` (an LFS file: the ETag is its SHA-256), `Content-Length` |
| `GET` the same | the file, or from `Range: bytes=N-` on as `206 Partial Content` with `Content-Range` |
| `GET /api/models/{owner}/{name}` (and `/revision/{revision}`) | the repository: `id`, `sha`, `siblings` (`rfilename`, `size`, `blobId`, `lfs` with `sha256`, `size`, `pointerSize`) |
| anything else | 404 with `X-Error-Code: RepoNotFound` or `EntryNotFound`, as the hub says |

Faults a test turns on: `cut_next` GETs send the whole length in `Content-Length` and
then close the connection halfway; `fail_next` GETs answer 500; `corrupt` serves other
bytes of the same length than the checksum the headers give. Every request is recorded
(method, path, Range header).

    with start_hub({("me/tiny-GGUF", "tiny.gguf"): data}) as hub:
        os.environ["HF_ENDPOINT"] = hub.url
"""

from __future__ import annotations

import hashlib
import re
import struct
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

COMMIT = "0123456789abcdef0123456789abcdef01234567"
_RESOLVE = re.compile(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")
_API = re.compile(r"^/api/models/([^/]+/[^/]+?)(?:/revision/([^/]+))?$")


def tiny_gguf(name: str = "tiny", padding: int = 256 * 1024) -> bytes:
    """A small, valid GGUF file (version 3, no tensors): its architecture, name and a long
    description that gives it some size to download in pieces."""

    def text(value: str) -> bytes:
        raw = value.encode()
        return struct.pack("<Q", len(raw)) + raw

    pairs = [
        ("general.architecture", "llama"),
        ("general.name", name),
        ("general.description", "a model of nothing, for tests. " * (padding // 31 + 1)),
    ]
    body = b"".join(text(k) + struct.pack("<I", 8) + text(v) for k, v in pairs)
    return b"GGUF" + struct.pack("<IQQ", 3, 0, len(pairs)) + body


@dataclass
class Hub:
    """The running stub: its URL, its files, the requests it saw and its faults."""

    url: str
    files: dict[tuple[str, str], bytes]
    requests: list[dict[str, Any]] = field(default_factory=list)
    cut_next: int = 0
    fail_next: int = 0
    corrupt: bool = False

    def gets(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["method"] == "GET" and "/resolve/" in r["path"]]


def _handler(hub: Hub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _missing(self, code: str) -> None:
            self.send_response(404)
            self.send_header("X-Error-Code", code)
            self.send_header("X-Error-Message", code)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _record(self) -> None:
            hub.requests.append(
                {
                    "method": self.command,
                    "path": self.path,
                    "range": self.headers.get("Range", ""),
                }
            )

        def do_HEAD(self) -> None:
            self._record()
            self._resolve(head=True)

        def do_GET(self) -> None:
            self._record()
            if self.path.startswith("/api/models/"):
                self._listing()
            else:
                self._resolve(head=False)

        def _listing(self) -> None:
            import json

            found = _API.match(self.path.split("?", 1)[0])
            repo = found.group(1) if found else ""
            siblings = [
                {
                    "rfilename": file,
                    "size": len(data),
                    "blobId": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest(),
                    "lfs": {
                        "sha256": hashlib.sha256(data).hexdigest(),
                        "size": len(data),
                        "pointerSize": 134,
                    },
                }
                for (owner, file), data in hub.files.items()
                if owner == repo
            ]
            if not siblings:
                self._missing("RepoNotFound")
                return
            body = json.dumps({"id": repo, "sha": COMMIT, "siblings": siblings}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _resolve(self, *, head: bool) -> None:
            found = _RESOLVE.match(self.path.split("?", 1)[0])
            if not found:
                self._missing("RepoNotFound")
                return
            repo, _revision, file = found.groups()
            if not any(owner == repo for owner, _ in hub.files):
                self._missing("RepoNotFound")
                return
            data = hub.files.get((repo, file))
            if data is None:
                self._missing("EntryNotFound")
                return
            sha = hashlib.sha256(data).hexdigest()
            if not head and hub.fail_next:
                hub.fail_next -= 1
                self.send_response(500)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            start = 0
            asked = re.match(r"bytes=(\d+)-$", self.headers.get("Range", ""))
            if asked and not head:
                start = int(asked.group(1))
            served = data if not hub.corrupt else bytes(b ^ 0x5A for b in data)
            self.send_response(206 if start else 200)
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("ETag", f'"{sha}"')
            self.send_header("X-Linked-Etag", f'"{sha}"')
            self.send_header("X-Linked-Size", str(len(data)))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Type", "application/octet-stream")
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.send_header("Content-Length", str(len(data) - start))
            self.end_headers()
            if head:
                return
            rest = served[start:]
            if hub.cut_next:
                hub.cut_next -= 1
                self.wfile.write(rest[: len(rest) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(rest)

    return Handler


@contextmanager
def start_hub(files: Mapping[tuple[str, str], bytes]) -> Iterator[Hub]:
    """Serve `files` ((repository, file) -> bytes) on a free port of 127.0.0.1."""
    hub = Hub("", dict(files))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    server.daemon_threads = True
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="hub-stub", daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
