"""The tokenize endpoints of the Text Completion backends, as each one answers: KoboldCpp's
`/api/extra/tokencount`, text-generation-webui's `/v1/internal/token-count`, llama.cpp's and
vLLM's `/tokenize` (told apart by their bodies: `content` or `prompt`), Aphrodite's
`/v1/tokenize` and TabbyAPI's `/v1/token/encode`.

A token here is one Chinese character, one run of letters or digits, or one other mark: a
Chinese text is many more tokens than its characters divided by 3.35, as with real
vocabularies. Each request is kept in `stub.tokenize_requests`; with `stub.tokenize_down`
every one fails with a 503.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

_TOKEN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|\w+|[^\w\s]")


def stub_tokens(text: str) -> list[int]:
    """The stub's tokens of a text (their ids are their lengths: enough to count)."""
    return [len(piece) for piece in _TOKEN.findall(text)]


class _Holder(Protocol):
    tokenize_requests: list[tuple[str, Any]]
    tokenize_down: bool


def tokenize_routes(stub: _Holder) -> list[Route]:
    """The routes, recording on `stub`."""

    async def receive(request: Request) -> tuple[Any, Response | None]:
        body = await request.json()
        stub.tokenize_requests.append((request.url.path, body))
        if stub.tokenize_down:
            return body, JSONResponse({"detail": "tokenizer unavailable"}, status_code=503)
        if not isinstance(body, dict):
            return body, JSONResponse({"detail": "the body must be an object"}, status_code=422)
        return body, None

    def text_of(body: dict[str, Any], key: str) -> str | None:
        value = body.get(key)
        return value if isinstance(value, str) else None

    async def kobold(request: Request) -> Response:
        body, failed = await receive(request)
        if failed:
            return failed
        text = text_of(body, "prompt")
        if text is None:
            return JSONResponse({"detail": "prompt is required"}, status_code=422)
        tokens = stub_tokens(text)
        return JSONResponse({"value": len(tokens), "ids": tokens})

    async def ooba(request: Request) -> Response:
        body, failed = await receive(request)
        if failed:
            return failed
        text = text_of(body, "text")
        if text is None:
            return JSONResponse({"detail": "text: field required"}, status_code=422)
        return JSONResponse({"length": len(stub_tokens(text))})

    async def tokenize(request: Request) -> Response:
        # llama.cpp's server takes `content`; vLLM's OpenAI server takes `model` and `prompt`
        body, failed = await receive(request)
        if failed:
            return failed
        if text_of(body, "content") is not None:
            return JSONResponse({"tokens": stub_tokens(body["content"])})
        text = text_of(body, "prompt")
        if text is None or not isinstance(body.get("model"), str):
            return JSONResponse({"detail": "model and prompt are required"}, status_code=422)
        tokens = stub_tokens(text)
        return JSONResponse({"count": len(tokens), "max_model_len": 8192, "tokens": tokens})

    async def aphrodite(request: Request) -> Response:
        body, failed = await receive(request)
        if failed:
            return failed
        text = text_of(body, "prompt")
        if text is None:
            return JSONResponse({"detail": "prompt is required"}, status_code=422)
        tokens = stub_tokens(text)
        return JSONResponse({"value": len(tokens), "ids": tokens})

    async def tabby(request: Request) -> Response:
        body, failed = await receive(request)
        if failed:
            return failed
        text = text_of(body, "text")
        if text is None:
            return JSONResponse({"detail": "text is required"}, status_code=422)
        tokens = stub_tokens(text)
        return JSONResponse({"tokens": tokens, "length": len(tokens)})

    return [
        Route("/api/extra/tokencount", kobold, methods=["POST"]),
        Route("/v1/internal/token-count", ooba, methods=["POST"]),
        Route("/tokenize", tokenize, methods=["POST"]),
        Route("/v1/tokenize", aphrodite, methods=["POST"]),
        Route("/v1/token/encode", tabby, methods=["POST"]),
    ]
