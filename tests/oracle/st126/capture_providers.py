"""Runs the capture harness's `capture.py` with a stub that also answers the Text Completion
types whose status or generate paths the harness's stub does not know.

SillyTavern 1.12.6 checks TabbyAPI at `/v1/model/list` and `/v1/model`, Ollama at
`/api/tags`, a HuggingFace endpoint at `/info`, and sends Ollama's generation to its
native `/api/generate`. This wrapper adds those routes (answering in each server's own
format) and counts `/api/generate` as a generation, then hands over to `capture.py`:

    python3 capture_providers.py HARNESS_DIR --st-url http://127.0.0.1:PORT --cases SCRATCH
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import ThreadingHTTPServer
from typing import Any

sys.path.insert(0, sys.argv.pop(1))
import capture  # the harness, from the folder given first
import stub_llm
import stub_llm_v3

OLLAMA_GENERATE = "/api/generate"


class Handler(stub_llm_v3.Handler):
    """The harness's stub plus TabbyAPI's, Ollama's and HuggingFace's own routes."""

    def do_GET(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        if path == "/v1/model/list":
            return self._send_json(
                {"object": "list", "data": [{"id": "stub-model", "object": "model"}]}
            )
        if path == "/v1/model":
            return self._send_json({"id": "stub-model", "object": "model"})
        if path == "/api/tags":
            return self._send_json({"models": [{"name": "stub-model", "model": "stub-model"}]})
        if path == "/info":
            return self._send_json({"model_id": "stub-model"})
        return super().do_GET()

    def do_POST(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        if path != OLLAMA_GENERATE:
            return super().do_POST()
        body: Any = self._read_body()
        stub_llm._record(path, body)
        done = {"model": "stub-model", "response": "", "done": True}
        if isinstance(body, dict) and body.get("stream"):
            lines = [{"model": "stub-model", "response": stub_llm.REPLY_TEXT, "done": False}, done]
            data = "".join(json.dumps(x) + "\n" for x in lines).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return None
        return self._send_json({**done, "response": stub_llm.REPLY_TEXT})


def start_stub(port: int) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def wait_online(page: Any, timeout: int = 30) -> Any:
    """The harness's wait, except for Mistral AI behind a reverse proxy: 1.12.6 checks
    Mistral's status at api.mistral.ai whatever the proxy (openai.js sends the proxy to the
    status check for OpenAI and Claude only), so the page is marked connected by hand, as
    an earlier successful check would have left it; the send itself uses the proxy."""
    try:
        return await _harness_wait_online(page, 15 if await _mistral_proxy(page) else timeout)
    except TimeoutError:
        if not await _mistral_proxy(page):
            raise
        await page.evaluate(
            "async () => { (await import('/script.js')).setOnlineStatus('stub-model'); }"
        )
        return await _harness_wait_online(page, timeout)


async def _mistral_proxy(page: Any) -> bool:
    return bool(
        await page.evaluate(
            """async () => { const o = (await import('/scripts/openai.js')).oai_settings;
            return SillyTavern.getContext().mainApi === 'openai'
                && o.chat_completion_source === 'mistralai' && !!o.reverse_proxy; }"""
        )
    )


_harness_wait_online = capture.wait_online
capture.wait_online = wait_online
capture.start_stub = start_stub
capture.GEN_PATHS = (*capture.GEN_PATHS, OLLAMA_GENERATE)

if __name__ == "__main__":
    capture.main()
