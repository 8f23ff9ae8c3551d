"""A stand-in for Ollama on 127.0.0.1, speaking its native API as Ollama does.

| request | answer |
|---|---|
| `GET /api/tags` | `{"models": [{"name", "model", "modified_at", "size", "digest", "details"}]}` |
| `POST /api/pull` `{"model", "stream"}` | `application/x-ndjson`: `pulling manifest`, then per layer `pulling <digest>` with `digest`, `total`, `completed`, then `verifying sha256 digest`, `writing manifest`, `success`; an unknown model ends in `{"error": ...}` |
| `POST /api/generate` `{"model", "prompt", "raw", "options", "stream"}` | streamed lines `{"model", "created_at", "response", "done": false}`, the last `{"done": true, "done_reason", "prompt_eval_count", "eval_count", ...}`; one object when `stream` is false |
| `POST /api/chat` `{"model", "messages", "stream"}` | the same with `"message": {"role": "assistant", "content"}` |

A model not pulled answers 404 `{"error": "model \"x\" not found, try pulling it first"}`.
Every request body is recorded; `reply` is the tokens the next answers stream.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

NDJSON = "application/x-ndjson"
# what the stub can pull: model name -> its layers' sizes
PULLABLE = {"tinyllama:latest": (6000, 300), "qwen2.5:0.5b": (4000,)}


@dataclass
class Ollama:
    """The running stub: its URL, its models, what it was sent."""

    url: str = ""
    models: list[str] = field(default_factory=lambda: ["llama3.2:1b"])
    reply: list[str] = field(default_factory=lambda: ["Hello", ",", " traveller", "."])
    bodies: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def _stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000000Z", time.gmtime())


def _line(item: dict[str, Any]) -> bytes:
    return (json.dumps(item) + "\n").encode()


def _tag(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "model": name,
        "modified_at": _stamp(),
        "size": sum(PULLABLE.get(name, (1000,))),
        "digest": f"{abs(hash(name)):064x}"[:64],
        "details": {"format": "gguf", "family": "llama", "parameter_size": "1B"},
    }


def create_app(state: Ollama) -> Starlette:
    async def tags(request: Request) -> Response:
        return JSONResponse({"models": [_tag(m) for m in state.models]})

    async def pull(request: Request) -> Response:
        body = await request.json()
        state.bodies.append(("/api/pull", body))
        name = str(body.get("model") or body.get("name") or "")
        if ":" not in name:
            name += ":latest"

        async def steps() -> AsyncIterator[bytes]:
            yield _line({"status": "pulling manifest"})
            if name not in PULLABLE:
                yield _line({"error": "pull model manifest: file does not exist"})
                return
            for index, size in enumerate(PULLABLE[name]):
                digest = f"sha256:{index:064x}"
                for completed in range(0, size + 1, max(1, size // 4)):
                    yield _line(
                        {
                            "status": f"pulling {digest[7:19]}",
                            "digest": digest,
                            "total": size,
                            "completed": completed,
                        }
                    )
                    await asyncio.sleep(0.01)
            for status in ("verifying sha256 digest", "writing manifest", "success"):
                yield _line({"status": status})
            if name not in state.models:
                state.models.append(name)

        return StreamingResponse(steps(), media_type=NDJSON)

    def answer(path: str, piece: str, done: bool, body: dict[str, Any]) -> dict[str, Any]:
        item: dict[str, Any] = {"model": body["model"], "created_at": _stamp()}
        if path == "/api/chat":
            item["message"] = {"role": "assistant", "content": piece}
        else:
            item["response"] = piece
        item["done"] = done
        if done:
            item.update(
                done_reason="stop",
                total_duration=1000,
                load_duration=10,
                prompt_eval_count=len(str(body.get("prompt", "")).split()) or 1,
                prompt_eval_duration=100,
                eval_count=len(state.reply),
                eval_duration=500,
            )
            if path == "/api/generate" and not body.get("raw"):
                item["context"] = [1, 2, 3]
        return item

    async def generate(request: Request) -> Response:
        body = await request.json()
        path = request.url.path
        state.bodies.append((path, body))
        model = str(body.get("model") or "")
        if model not in state.models and f"{model}:latest" not in state.models:
            return JSONResponse(
                {"error": f'model "{model}" not found, try pulling it first'}, status_code=404
            )
        if not body.get("stream", True):
            whole = answer(path, "".join(state.reply), True, body)
            return JSONResponse(whole)

        async def lines() -> AsyncIterator[bytes]:
            for piece in state.reply:
                yield _line(answer(path, piece, False, body))
                await asyncio.sleep(0.005)
            yield _line(answer(path, "", True, body))

        return StreamingResponse(lines(), media_type=NDJSON)

    return Starlette(
        routes=[
            Route("/api/tags", tags),
            Route("/api/pull", pull, methods=["POST"]),
            Route("/api/generate", generate, methods=["POST"]),
            Route("/api/chat", generate, methods=["POST"]),
        ]
    )


@contextmanager
def start_ollama() -> Iterator[Ollama]:
    """Serve the stub on a free port of 127.0.0.1 until the block ends."""
    state = Ollama()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(state), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, name="ollama-stub", daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    state.url = f"http://127.0.0.1:{port}"
    try:
        yield state
    finally:
        server.should_exit = True
        thread.join(timeout=5)
