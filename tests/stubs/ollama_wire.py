"""Ollama's native `/api/generate` and `/api/tags` for the shared stub model server.

Lines of JSON (`application/x-ndjson`): `{"model", "created_at", "response", "done":
false}` per token, then `{"done": true, "done_reason", "prompt_eval_count", "eval_count"}`;
an error is `{"error": "..."}` (mid-stream as its own line). A key, where the stub wants
one, comes as a bearer token (Ollama behind a proxy that checks keys).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

if TYPE_CHECKING:
    from tests.stubs.model_server import StubServer

OPTIONS = {
    "num_ctx", "num_predict", "temperature", "top_k", "top_p", "min_p", "typical_p", "tfs_z",
    "repeat_penalty", "repeat_last_n", "presence_penalty", "frequency_penalty", "mirostat",
    "mirostat_tau", "mirostat_eta", "seed", "stop", "num_keep", "penalize_newline",
}  # fmt: skip
FIELDS = {"model", "prompt", "suffix", "images", "format", "options", "system", "template",
          "stream", "raw", "keep_alive", "context", "think"}  # fmt: skip


def check_generate(body: Any) -> list[str]:
    """Ollama `POST /api/generate` (docs/api.md)."""
    if not isinstance(body, dict):
        return ["the body must be a JSON object"]
    problems = [f"unknown field {k!r}" for k in body if k not in FIELDS]
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model is required")
    if not isinstance(body.get("prompt", ""), str):
        problems.append("prompt must be a string")
    options = body.get("options", {})
    if not isinstance(options, dict):
        return [*problems, "options must be an object"]
    problems += [f"unknown option {k!r}" for k in options if k not in OPTIONS]
    stop = options.get("stop", [])
    if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        problems.append("options.stop must be a list of strings")
    return problems


def _line(item: dict[str, Any]) -> bytes:
    return (json.dumps(item) + "\n").encode()


async def generate(stub: StubServer, request: Request) -> Response:
    body, problems = await stub._receive(request, check_generate)
    reply = stub._next()
    auth = request.headers.get("authorization", "")
    if not stub._key_ok(auth.removeprefix("Bearer ") if auth else None):
        return JSONResponse({"error": "unauthorized"}, status_code=401)
    if problems or reply.status is not None:
        status = 400 if problems else reply.status or 500
        return JSONResponse(
            {"error": "; ".join(problems) or reply.error_message}, status_code=status
        )
    model = body["model"]
    final = {
        "model": model,
        "created_at": "2026-01-01T00:00:00Z",
        "response": "",
        "done": True,
        "done_reason": reply.finish,
        "total_duration": 1000,
        "prompt_eval_count": reply.input_tokens,
        "eval_count": len(reply.tokens),
    }
    if not body.get("stream", True):
        return JSONResponse({**final, "response": reply.text})
    chunks = [
        _line({"model": model, "created_at": "2026-01-01T00:00:00Z", "response": t, "done": False})
        for t in reply.tokens
    ]
    tail = [_line({"error": reply.stream_error})] if reply.stream_error else [_line(final)]
    if reply.raw is not None:
        chunks, tail = [piece.encode() for piece in reply.raw], []
    return StreamingResponse(
        stub._paced(reply, [], chunks, tail), media_type="application/x-ndjson"
    )


async def tags(stub: StubServer, request: Request) -> Response:
    return JSONResponse(
        {"models": [{"name": m, "model": m, "size": 1000, "details": {}} for m in stub.models]}
    )
