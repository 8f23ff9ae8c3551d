"""A local OpenAI-compatible model server for the end-to-end tests.

It speaks the Chat Completions wire protocol (`data: {...}` SSE chunks ending with
`data: [DONE]`). Each reply is numbered, so a regenerate gives a different text. A
last user message containing `slowly` streams 60 words 0.15 s apart, long enough to
stop or reload the page mid-stream. Run: `python stub_openai.py PORT`.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

COUNTER = {"n": 0}
LOCK = threading.Lock()
REQUESTS: list[dict[str, Any]] = []


def reply_words(body: dict[str, Any]) -> tuple[list[str], float]:
    messages = body.get("messages") or []
    last_user = next(
        (m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), ""
    )
    with LOCK:
        COUNTER["n"] += 1
        n = COUNTER["n"]
    if isinstance(last_user, list):
        last_user = " ".join(part.get("text", "") for part in last_user if isinstance(part, dict))
    if "slowly" in last_user:
        return [f"word{i} " for i in range(60)], 0.15
    return [f"Reply {n} ", "to: ", f"*{last_user[:40]}*", ' — "hello".'], 0.01


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.endswith("/models"):
            self._json(
                200,
                {
                    "object": "list",
                    "data": [
                        {"id": "stub-model", "object": "model"},
                        {"id": "stub-large", "object": "model"},
                    ],
                },
            )
        elif self.path == "/_requests":
            self._json(200, REQUESTS)
        else:
            self._json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.endswith("/chat/completions"):
            return self._json(
                404, {"error": {"message": "not found", "type": "invalid_request_error"}}
            )
        REQUESTS.append(body)
        words, delay = reply_words(body)
        if not body.get("stream"):
            return self._json(
                200,
                {
                    "id": "chatcmpl-stub",
                    "object": "chat.completion",
                    "model": body.get("model", ""),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": "".join(words)},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {
                        "prompt_tokens": 10,
                        "completion_tokens": len(words),
                        "total_tokens": 10 + len(words),
                    },
                },
            )
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            for word in words:
                chunk = {
                    "id": "chatcmpl-stub",
                    "object": "chat.completion.chunk",
                    "model": body.get("model", ""),
                    "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}],
                }
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
                time.sleep(delay)
            end = {
                "id": "chatcmpl-stub",
                "object": "chat.completion.chunk",
                "model": body.get("model", ""),
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                "usage": {
                    "prompt_tokens": 10,
                    "completion_tokens": len(words),
                    "total_tokens": 10 + len(words),
                },
            }
            self.wfile.write(f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode())
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
