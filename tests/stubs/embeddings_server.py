"""An OpenAI-compatible `POST /v1/embeddings` endpoint on 127.0.0.1 for tests: each text's
vector is made from its hash (the same text, the same vector), every request is recorded
with its model and texts, and each answer may be delayed (a backlog that takes a while).

    with embeddings_stub(delay=0.05) as stub:
        url = stub.url              # http://127.0.0.1:PORT/v1
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIMS = 16


def stub_vector(text: str) -> list[float]:
    """The stub's (not normalised) vector of one text."""
    digest = hashlib.sha256(text.encode()).digest()
    return [b / 255.0 - 0.5 for b in digest[:DIMS]]


@dataclass
class EmbeddingsStub:
    url: str = ""
    delay: float = 0.0
    requests: list[tuple[str, list[str]]] = field(default_factory=list)  # (model, texts)
    # Each request's Authorization header ("" when it had none), in order.
    authorizations: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def texts_of(self, model: str) -> set[str]:
        with self.lock:
            return {text for asked, texts in self.requests if asked == model for text in texts}


@contextmanager
def embeddings_stub(delay: float = 0.0) -> Iterator[EmbeddingsStub]:
    stub = EmbeddingsStub(delay=delay)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path != "/v1/embeddings":
                self._send(404, {"error": {"message": "not found"}})
                return
            with stub.lock:
                stub.requests.append((str(body["model"]), list(body["input"])))
                stub.authorizations.append(self.headers.get("Authorization", ""))
            if stub.delay:
                time.sleep(stub.delay)
            data = [
                {"object": "embedding", "index": i, "embedding": stub_vector(text)}
                for i, text in enumerate(body["input"])
            ]
            usage = {"prompt_tokens": 1, "total_tokens": 1}
            self._send(
                200, {"object": "list", "data": data, "model": body["model"], "usage": usage}
            )

        def _send(self, status: int, payload: dict[str, object]) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    stub.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
