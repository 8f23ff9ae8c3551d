"""Local stand-ins for model APIs on 127.0.0.1, speaking each provider's real wire protocol.

One stub serves every API on its usual paths:

| API | path |
|---|---|
| OpenAI Chat Completions (and compatible) | `POST /v1/chat/completions`, `GET /v1/models` |
| Mistral Chat Completions | `POST /mistral/v1/chat/completions` (Mistral's own schema) |
| OpenAI text completions | `POST /v1/completions` |
| Anthropic Messages | `POST /v1/messages` |
| Google Gemini | `POST /v1beta/models/{model}:streamGenerateContent?alt=sse`, `:generateContent` |
| llama.cpp server | `POST /completion` |
| KoboldCpp | `POST /api/v1/generate`, `POST /api/extra/generate/stream` |
| Ollama | `POST /api/generate` (lines of JSON), `GET /api/tags` (`ollama_wire.py`) |

Every request is checked against the provider's documented schema (a bad one gets
the provider's own 400 error) and recorded. Replies are scripted (`Reply`): the
tokens, their pace, a pause a test releases by hand, an HTTP error, an error event
mid-stream, a connection cut mid-stream, tool calls and reasoning.

    with start_stub(key="sk-test") as stub:
        stub.script(Reply(tokens=["Hel", "lo"], delay=0.01))
        url = stub.base_url("openai")      # http://127.0.0.1:PORT/v1
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.stubs import ollama_wire, schemas
from tests.stubs.tokenize_routes import tokenize_routes


@dataclass
class Reply:
    """One scripted answer.

    `tokens` stream one per chunk, `delay` seconds apart (`first_delay` before the
    first). `hold_after=N` pauses after N chunks until `StubServer.release()`.
    `cut_after=N` breaks the connection after N chunks (no clean end); `end_after=N`
    ends the body cleanly but without the provider's final event. `stream_error`
    sends the provider's error event after the tokens. `status` answers with an HTTP
    error in the provider's format instead. `tool_calls` are `(name, arguments dict)`.
    """

    tokens: list[str] = field(default_factory=lambda: ["Hello", ",", " traveller", "."])
    reasoning: list[str] = field(default_factory=list)
    # the OpenAI-style delta field reasoning streams in: DeepSeek's and xAI's
    # `reasoning_content`, OpenRouter's `reasoning`
    reasoning_field: str = "reasoning_content"
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    delay: float = 0.0
    first_delay: float = 0.0
    hold_after: int | None = None
    cut_after: int | None = None
    end_after: int | None = None
    stream_error: str | None = None
    status: int | None = None
    error_message: str = "scripted failure"
    finish: str = "stop"
    input_tokens: int = 12
    raw: list[str] | None = None
    # prompt tokens an OpenAI-style usage says its cache gave: as OpenAI says it
    # (`prompt_tokens_details.cached_tokens`) or as DeepSeek does (`prompt_cache_hit_tokens`
    # beside `prompt_cache_miss_tokens`), by `cache_usage`
    cached_tokens: int = 0
    cache_usage: str = "openai"

    @property
    def text(self) -> str:
        return "".join(self.tokens)


@dataclass
class Recorded:
    """One request the stub received."""

    path: str
    headers: dict[str, str]
    body: Any
    problems: list[str]


class _Cut(Exception):
    """Raised inside a streaming body to drop the connection mid-answer."""


class StubServer:
    """A running stub: its URL, the requests it saw, and the replies it will give."""

    def __init__(self, key: str | None = None, models: tuple[str, ...] = ("stub-model",)) -> None:
        self.key = key
        self.models = models
        # model -> context size listed with it as OpenRouter does (`context_length`)
        self.context_lengths: dict[str, int] = {}
        self.requests: list[Recorded] = []
        # False: requests are checked but not kept (a load run sends thousands)
        self.record = True
        self.request_count = 0
        self._unkept_problems: list[str] = []
        self.default = Reply()
        self._queue: deque[Reply] = deque()
        self._gate = threading.Event()
        self._lock = threading.Lock()
        self.url = ""
        self.chunks_sent = 0
        self.first_byte_times: list[float] = []
        # perf_counter() at which each text chunk of the latest reply was handed to the server
        self.chunk_times: list[float] = []
        self.disconnects = 0
        self._server: uvicorn.Server | None = None
        # Anthropic's prompt cache: each cached prefix (up to a `cache_control` block)
        # and its tokens, as the API keeps them between requests
        self.prompt_cache: dict[str, int] = {}
        # the Text Completion backends' tokenize requests (tokenize_routes.py)
        self.tokenize_requests: list[tuple[str, Any]] = []
        self.tokenize_down = False
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ test controls

    def script(self, *replies: Reply) -> None:
        """Queue replies for the next requests; when the queue is empty `default` answers.

        A reply with `hold_after` closes the gate now, so a `release()` that comes
        before the reply reaches its pause still lets it through.
        """
        with self._lock:
            if any(r.hold_after is not None for r in replies):
                self._gate.clear()
            self._queue.extend(replies)

    def clear(self) -> None:
        """Forget the replies queued that no request took (a test that stopped early)."""
        with self._lock:
            self._queue.clear()

    def release(self) -> None:
        """Let a reply paused by `hold_after` go on."""
        self._gate.set()

    def base_url(self, api: str) -> str:
        """The URL a connection of this API should use."""
        if api in ("openai", "openai-compatible", "openai-text", "anthropic"):
            return f"{self.url}/v1"
        if api == "google":
            return f"{self.url}/v1beta"
        if api == "mistral":
            return f"{self.url}/mistral/v1"
        return self.url

    @property
    def problems(self) -> list[str]:
        """Every schema problem seen so far, across all requests."""
        return [p for r in self.requests for p in r.problems] + self._unkept_problems

    @staticmethod
    def _offered(reply: Reply, body: Any) -> Reply:
        """The reply without tool calls when the request offered no tools."""
        if reply.tool_calls and not (isinstance(body, dict) and body.get("tools")):
            return replace(reply, tool_calls=[])
        return reply

    def _next(self) -> Reply:
        with self._lock:
            return self._queue.popleft() if self._queue else self.default

    # --------------------------------------------------------------- lifecycle

    def start(self, port: int = 0, tls: tuple[Path, Path] | None = None) -> StubServer:
        """Serve on 127.0.0.1 (`port` 0: a free one) from a background thread; with
        `tls` (certificate and key files), over HTTPS."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        port = sock.getsockname()[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
        config = uvicorn.Config(
            self._app(),
            log_level="error",
            lifespan="off",
            timeout_graceful_shutdown=1,
            ssl_certfile=str(tls[0]) if tls else None,
            ssl_keyfile=str(tls[1]) if tls else None,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the stub model server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._gate.set()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)

    # ------------------------------------------------------------------- app

    def _app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self._openai_chat, methods=["POST"]),
                Route("/mistral/v1/chat/completions", self._mistral_chat, methods=["POST"]),
                Route("/v1/completions", self._openai_text, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/v1/messages", self._anthropic, methods=["POST"]),
                Route("/v1beta/models", self._gemini_models, methods=["GET"]),
                Route("/v1beta/models/{target}", self._gemini, methods=["POST"]),
                Route("/completion", self._llamacpp, methods=["POST"]),
                Route("/api/v1/generate", self._kobold, methods=["POST"]),
                Route("/api/extra/generate/stream", self._kobold_stream, methods=["POST"]),
                Route("/api/v1/model", self._kobold_model, methods=["GET"]),
                *tokenize_routes(self),
                Route("/api/generate", partial(ollama_wire.generate, self), methods=["POST"]),
                Route("/api/tags", partial(ollama_wire.tags, self), methods=["GET"]),
                Route("/_stub/script", self._control_script, methods=["POST"]),
                Route("/_stub/default", self._control_default, methods=["POST"]),
                Route("/_stub/release", self._control_release, methods=["POST"]),
                Route("/_stub/state", self._control_state, methods=["GET"]),
            ]
        )

    # ------------------------------------------------- control from another process

    async def _control_script(self, request: Request) -> Response:
        """Queue replies given as JSON objects with `Reply`'s fields."""
        payload = await request.json()
        items = payload if isinstance(payload, list) else [payload]
        replies = []
        for item in items:
            if "tool_calls" in item:
                item = {**item, "tool_calls": [tuple(call) for call in item["tool_calls"]]}
            replies.append(Reply(**item))
        self.script(*replies)
        return JSONResponse({"queued": len(replies)})

    async def _control_default(self, request: Request) -> Response:
        """Set the reply given whenever the queue is empty, as a JSON object with `Reply`'s
        fields, so any number of requests get the same answer; `"record": false` beside
        them stops keeping each request (still checked, counted in `requests_seen`)."""
        payload = dict(await request.json())
        record = payload.pop("record", None)
        if "tool_calls" in payload:
            payload["tool_calls"] = [tuple(call) for call in payload["tool_calls"]]
        self.default = Reply(**payload)
        if record is not None:
            self.record = bool(record)
        return JSONResponse({"default": True, "record": self.record})

    async def _control_release(self, request: Request) -> Response:
        self.release()
        return JSONResponse({"released": True})

    async def _control_state(self, request: Request) -> Response:
        """What a test in another process may check (`?requests=1` adds every request seen)."""
        state: dict[str, Any] = {
            "request_count": len(self.requests),
            "requests_seen": self.request_count,
            "problems": self.problems,
            "chunk_times": self.chunk_times,
            "disconnects": self.disconnects,
        }
        if request.query_params.get("requests"):
            state["requests"] = [
                {"path": r.path, "body": r.body, "problems": r.problems} for r in self.requests
            ]
        return JSONResponse(state)

    async def _receive(
        self, request: Request, check: Callable[[Any], list[str]]
    ) -> tuple[Any, list[str]]:
        raw = await request.body()
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            body, problems = None, ["the body is not JSON"]
        else:
            problems = check(body)
        path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        self.request_count += 1
        if not self.record:
            self._unkept_problems += problems
        else:
            self.requests.append(Recorded(path, dict(request.headers), body, problems))
        return body, problems

    def _key_ok(self, given: str | None) -> bool:
        return self.key is None or given == self.key

    async def _paced(
        self, reply: Reply, lead: list[bytes], chunks: list[bytes], tail: list[bytes]
    ) -> AsyncIterator[bytes]:
        """Send the opening chunks, the text chunks at the scripted pace, then the closing ones.

        `cut_after`, `end_after` and `hold_after` count text chunks only.
        """
        try:
            if reply.first_delay:
                await asyncio.sleep(reply.first_delay)
            for chunk in lead:
                yield chunk
            for i, chunk in enumerate(chunks):
                if reply.cut_after is not None and i >= reply.cut_after:
                    raise _Cut
                if reply.end_after is not None and i >= reply.end_after:
                    return
                if reply.hold_after is not None and i == reply.hold_after:
                    while not self._gate.is_set():
                        await asyncio.sleep(0.005)
                now = time.perf_counter()
                if i == 0:
                    self.first_byte_times.append(now)
                    self.chunk_times = []
                self.chunk_times.append(now)
                yield chunk
                self.chunks_sent += 1
                if reply.delay:
                    await asyncio.sleep(reply.delay)
            for chunk in tail:
                yield chunk
        except asyncio.CancelledError:
            self.disconnects += 1
            raise

    @staticmethod
    def _sse(data: Any, event: str | None = None) -> bytes:
        text = data if isinstance(data, str) else json.dumps(data)
        head = f"event: {event}\n" if event else ""
        return f"{head}data: {text}\n\n".encode()

    def _stream(
        self, reply: Reply, chunks: list[bytes], tail: list[bytes], lead: list[bytes] | None = None
    ) -> Response:
        if reply.raw is not None:
            chunks, tail, lead = [piece.encode() for piece in reply.raw], [], []
        return StreamingResponse(
            self._paced(reply, lead or [], chunks, tail),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
        )

    # ---------------------------------------------------------------- OpenAI

    def _openai_error(self, status: int, message: str, code: str) -> Response:
        kind = "invalid_request_error" if status < 500 else "server_error"
        error = {"message": message, "type": kind, "param": None, "code": code}
        return JSONResponse({"error": error}, status_code=status)

    def _openai_gate(self, request: Request, problems: list[str], reply: Reply) -> Response | None:
        auth = request.headers.get("authorization", "")
        if not self._key_ok(auth.removeprefix("Bearer ") if auth else None):
            shown = auth.removeprefix("Bearer ")
            masked = f"{shown[:3]}***{shown[-4:]}" if len(shown) > 8 else "***"
            return self._openai_error(
                401, f"Incorrect API key provided: {masked}.", "invalid_api_key"
            )
        if problems:
            return self._openai_error(400, "; ".join(problems), "invalid_request")
        if reply.status is not None:
            code = {404: "model_not_found", 429: "rate_limit_exceeded"}.get(reply.status, "error")
            if reply.status == 400:
                code = "context_length_exceeded"
            failed = self._openai_error(reply.status, reply.error_message, code)
            if reply.status == 429:
                failed.headers["retry-after"] = "20"
            return failed
        return None

    async def _mistral_chat(self, request: Request) -> Response:
        # Mistral speaks OpenAI's wire with its own request schema; its last chunk
        # carries the usage beside the finish reason
        return await self._openai_chat(request, mistral=True)

    async def _openai_chat(self, request: Request, *, mistral: bool = False) -> Response:
        compatible = request.headers.get("x-stub-strict") != "openai"
        body, problems = await self._receive(
            request,
            schemas.check_mistral_chat
            if mistral
            else lambda b: schemas.check_openai_chat(b, compatible=compatible),
        )
        reply = self._offered(self._next(), body)
        failed = self._openai_gate(request, problems, reply)
        if failed:
            return failed
        model = body["model"]
        if model not in self.models:
            return self._openai_error(
                404, f"The model `{model}` does not exist or you do not have access to it.",
                "model_not_found",
            )  # fmt: skip
        base = {
            "id": "chatcmpl-stub",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
        }
        usage: dict[str, Any] = {"prompt_tokens": reply.input_tokens, "completion_tokens": len(reply.tokens),
                 "total_tokens": reply.input_tokens + len(reply.tokens)}  # fmt: skip
        if reply.cached_tokens and reply.cache_usage == "deepseek":
            usage["prompt_cache_hit_tokens"] = reply.cached_tokens
            usage["prompt_cache_miss_tokens"] = reply.input_tokens - reply.cached_tokens
        elif reply.cached_tokens:
            usage["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
        calls = [
            {"id": f"call_{i}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(reply.tool_calls)
        ]  # fmt: skip
        finish = "tool_calls" if calls else reply.finish
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
            if calls:
                message["tool_calls"] = calls
            if reply.reasoning:
                message[reply.reasoning_field] = "".join(reply.reasoning)
            return JSONResponse({
                **base, "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            })  # fmt: skip

        def chunk(delta: dict[str, Any], reason: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}
            return self._sse({**base, "choices": [choice]})

        lead = [chunk({"role": "assistant", "content": ""})]
        lead += [chunk({reply.reasoning_field: r}) for r in reply.reasoning]
        chunks = [chunk({"content": t}) for t in reply.tokens]
        for i, call in enumerate(calls):
            args = call["function"]["arguments"]
            half = len(args) // 2
            first = {"index": i, "id": call["id"], "type": "function",
                     "function": {"name": call["function"]["name"], "arguments": args[:half]}}  # fmt: skip
            chunks.append(chunk({"tool_calls": [first]}))
            chunks.append(
                chunk({"tool_calls": [{"index": i, "function": {"arguments": args[half:]}}]})
            )
        tail: list[bytes] = []
        if reply.stream_error:
            tail.append(
                self._sse({"error": {"message": reply.stream_error, "type": "server_error"}})
            )
        elif mistral or reply.cache_usage == "deepseek":
            # Mistral and DeepSeek send the usage beside the finish reason, unasked
            choice = {"index": 0, "delta": {"content": ""}, "finish_reason": finish}
            tail.append(self._sse({**base, "choices": [choice], "usage": usage}))
            tail.append(self._sse("[DONE]"))
        else:
            tail.append(chunk({}, finish))
            if (body.get("stream_options") or {}).get("include_usage"):
                tail.append(self._sse({**base, "choices": [], "usage": usage}))
            tail.append(self._sse("[DONE]"))
        return self._stream(reply, chunks, tail, lead)

    async def _openai_text(self, request: Request) -> Response:
        body, problems = await self._receive(request, schemas.check_openai_completions)
        reply = self._next()
        failed = self._openai_gate(request, problems, reply)
        if failed:
            return failed
        base = {
            "id": "cmpl-stub",
            "object": "text_completion",
            "created": 0,
            "model": body["model"],
        }
        if not body.get("stream"):
            choice = {
                "text": reply.text,
                "index": 0,
                "logprobs": None,
                "finish_reason": reply.finish,
            }
            return JSONResponse({**base, "choices": [choice]})

        def chunk(text: str, reason: str | None = None) -> bytes:
            choice = {"text": text, "index": 0, "logprobs": None, "finish_reason": reason}
            return self._sse({**base, "choices": [choice]})

        tail = [chunk("", reply.finish), self._sse("[DONE]")]
        if reply.stream_error:
            tail = [self._sse({"error": {"message": reply.stream_error, "type": "server_error"}})]
        return self._stream(reply, [chunk(t) for t in reply.tokens], tail)

    async def _models(self, request: Request) -> Response:
        """OpenAI's (and llama.cpp's) listing, or Anthropic's when asked with its headers."""
        if "anthropic-version" in request.headers:
            if not self._key_ok(request.headers.get("x-api-key")):
                return self._anthropic_error(401, "authentication_error", "invalid x-api-key")
            data = [{"type": "model", "id": m, "display_name": m} for m in self.models]
            return JSONResponse({"data": data, "has_more": False})
        if not self._key_ok(
            request.headers.get("authorization", "").removeprefix("Bearer ") or None
        ):
            return self._openai_error(401, "Incorrect API key provided.", "invalid_api_key")
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "stub"} for m in self.models]
        for entry in data:
            if entry["id"] in self.context_lengths:
                entry["context_length"] = self.context_lengths[entry["id"]]
        return JSONResponse({"object": "list", "data": data})

    async def _gemini_models(self, request: Request) -> Response:
        if not self._key_ok(request.headers.get("x-goog-api-key")):
            return self._google_error(
                400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT"
            )
        models = [
            {
                "name": f"models/{m}",
                "supportedGenerationMethods": ["generateContent", "countTokens"],
            }
            for m in self.models
        ]
        models.append({"name": "models/embedder", "supportedGenerationMethods": ["embedContent"]})
        return JSONResponse({"models": models})

    # ------------------------------------------------------------- Anthropic

    @staticmethod
    def _anthropic_error(status: int, kind: str, message: str) -> Response:
        return JSONResponse(
            {"type": "error", "error": {"type": kind, "message": message}}, status_code=status
        )

    async def _anthropic(self, request: Request) -> Response:
        body, problems = await self._receive(request, schemas.check_anthropic)
        reply = self._offered(self._next(), body)
        if request.headers.get("anthropic-version") != "2023-06-01":
            return self._anthropic_error(
                400, "invalid_request_error", "anthropic-version: header is required"
            )
        if not self._key_ok(request.headers.get("x-api-key")):
            return self._anthropic_error(401, "authentication_error", "invalid x-api-key")
        if problems:
            return self._anthropic_error(400, "invalid_request_error", "; ".join(problems))
        if reply.status is not None:
            kind = {401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error",
                    529: "overloaded_error", 400: "invalid_request_error"}.get(reply.status, "api_error")  # fmt: skip
            return self._anthropic_error(reply.status, kind, reply.error_message)
        model = body["model"]
        if model not in self.models:
            return self._anthropic_error(404, "not_found_error", f"model: {model}")
        stop_reason = (
            "tool_use"
            if reply.tool_calls
            else {"length": "max_tokens"}.get(reply.finish, "end_turn")
        )
        usage = {"input_tokens": reply.input_tokens, "output_tokens": len(reply.tokens),
                 **self._claude_cache(body)}  # fmt: skip
        if not body.get("stream"):
            content: list[dict[str, Any]] = []
            if reply.reasoning:
                content.append(
                    {"type": "thinking", "thinking": "".join(reply.reasoning), "signature": "x"}
                )
            content.append({"type": "text", "text": reply.text})
            content += [{"type": "tool_use", "id": f"toolu_{i}", "name": n, "input": a}
                        for i, (n, a) in enumerate(reply.tool_calls)]  # fmt: skip
            return JSONResponse({
                "id": "msg_stub", "type": "message", "role": "assistant", "model": model,
                "content": content, "stop_reason": stop_reason, "stop_sequence": None, "usage": usage,
            })  # fmt: skip
        start = {"type": "message_start", "message": {
            "id": "msg_stub", "type": "message", "role": "assistant", "content": [], "model": model,
            "stop_reason": None, "stop_sequence": None,
            "usage": {**usage, "output_tokens": 1}}}  # fmt: skip
        chunks = [self._sse(start, "message_start")]
        index = 0
        if reply.reasoning:
            chunks.append(self._sse({"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "thinking", "thinking": ""}}, "content_block_start"))  # fmt: skip
            chunks += [self._sse({"type": "content_block_delta", "index": 0,
                                  "delta": {"type": "thinking_delta", "thinking": r}}, "content_block_delta")
                       for r in reply.reasoning]  # fmt: skip
            chunks.append(
                self._sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
            )
            index = 1
        chunks.append(self._sse({"type": "content_block_start", "index": index,
                                 "content_block": {"type": "text", "text": ""}}, "content_block_start"))  # fmt: skip
        chunks.append(self._sse({"type": "ping"}, "ping"))
        lead_count = len(chunks)
        for token in reply.tokens:
            delta = {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": token},
            }
            chunks.append(self._sse(delta, "content_block_delta"))
        chunks.append(
            self._sse({"type": "content_block_stop", "index": index}, "content_block_stop")
        )
        for name, args in reply.tool_calls:
            index += 1
            block = {"type": "tool_use", "id": f"toolu_{index}", "name": name, "input": {}}
            chunks.append(
                self._sse(
                    {"type": "content_block_start", "index": index, "content_block": block},
                    "content_block_start",
                )
            )
            text = json.dumps(args)
            for piece in (text[: len(text) // 2], text[len(text) // 2 :]):
                delta = {"type": "input_json_delta", "partial_json": piece}
                chunks.append(
                    self._sse(
                        {"type": "content_block_delta", "index": index, "delta": delta},
                        "content_block_delta",
                    )
                )
            chunks.append(
                self._sse({"type": "content_block_stop", "index": index}, "content_block_stop")
            )
        if reply.stream_error:
            tail = [
                self._sse(
                    {
                        "type": "error",
                        "error": {"type": "overloaded_error", "message": reply.stream_error},
                    },
                    "error",
                )
            ]
        else:
            tail = [
                self._sse({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                           "usage": {"output_tokens": len(reply.tokens)}}, "message_delta"),
                self._sse({"type": "message_stop"}, "message_stop"),
            ]  # fmt: skip
        return self._stream(reply, chunks[lead_count:], tail, chunks[:lead_count])

    def _claude_cache(self, body: dict[str, Any]) -> dict[str, int]:
        """The usage counts of a request with cache breakpoints, as Anthropic reports them:
        the longest prefix cached before is read, the prefix up to the last breakpoint is
        written when new, and `input_tokens` is the rest (a token is four characters of the
        blocks' JSON here). Nothing for a request without breakpoints."""
        marked = schemas.cache_breakpoints(body)
        if not marked:
            return {}

        # the API reads a text as one text block: the prefix is the same either way
        def blocks_of(content: Any) -> list[Any]:
            if isinstance(content, list):
                return content
            return [{"type": "text", "text": content}] if content else []

        blocks = [("system", b) for b in blocks_of(body.get("system"))]
        for message in body["messages"]:
            blocks += [(message["role"], b) for b in blocks_of(message["content"])]
        seen, prefixes = "", []
        for role, part in blocks:
            plain = {k: v for k, v in part.items() if k != "cache_control"}
            seen += json.dumps([role, plain], sort_keys=True)
            if "cache_control" in part:
                prefixes.append((seen, len(seen) // 4))
        total = len(seen) // 4
        read = max((n for key, n in prefixes if key in self.prompt_cache), default=0)
        last_key, last_tokens = prefixes[-1]
        written = 0 if last_key in self.prompt_cache else last_tokens - read
        for key, n in prefixes:
            self.prompt_cache.setdefault(key, n)
        return {
            "input_tokens": total - read - written,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
        }

    # ---------------------------------------------------------------- Gemini

    @staticmethod
    def _google_error(status: int, message: str, state: str) -> Response:
        return JSONResponse(
            {"error": {"code": status, "message": message, "status": state}}, status_code=status
        )

    async def _gemini(self, request: Request) -> Response:
        body, problems = await self._receive(request, schemas.check_gemini)
        reply = self._offered(self._next(), body)
        target = request.path_params["target"]
        model, _, method = target.partition(":")
        if not self._key_ok(
            request.headers.get("x-goog-api-key") or request.query_params.get("key")
        ):
            return self._google_error(
                400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT"
            )
        if problems:
            return self._google_error(
                400, "Invalid JSON payload received. " + "; ".join(problems), "INVALID_ARGUMENT"
            )
        if reply.status is not None:
            state = {404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 403: "PERMISSION_DENIED"}.get(
                reply.status, "INVALID_ARGUMENT"
            )
            return self._google_error(reply.status, reply.error_message, state)
        if model not in self.models:
            return self._google_error(
                404, f"models/{model} is not found for API version v1beta", "NOT_FOUND"
            )
        finish = {"length": "MAX_TOKENS"}.get(reply.finish, "STOP")
        usage = {"promptTokenCount": reply.input_tokens, "candidatesTokenCount": len(reply.tokens),
                 "totalTokenCount": reply.input_tokens + len(reply.tokens)}  # fmt: skip

        def candidate(parts: list[dict[str, Any]], reason: str | None = None) -> dict[str, Any]:
            out: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
            if reason:
                out["finishReason"] = reason
            return out

        calls = [{"functionCall": {"name": n, "args": a}} for n, a in reply.tool_calls]
        if method == "generateContent":
            parts = (
                [{"text": r, "thought": True} for r in reply.reasoning]
                + [{"text": reply.text}]
                + calls
            )
            return JSONResponse(
                {
                    "candidates": [candidate(parts, finish)],
                    "usageMetadata": usage,
                    "modelVersion": model,
                }
            )
        if method != "streamGenerateContent" or request.query_params.get("alt") != "sse":
            return self._google_error(400, f"unsupported method {method}", "INVALID_ARGUMENT")

        def chunk(
            parts: list[dict[str, Any]], reason: str | None = None, with_usage: bool = False
        ) -> bytes:
            payload: dict[str, Any] = {
                "candidates": [candidate(parts, reason)],
                "modelVersion": model,
            }
            if with_usage:
                payload["usageMetadata"] = usage
            return f"data: {json.dumps(payload)}\r\n\r\n".encode()

        lead = [chunk([{"text": r, "thought": True}]) for r in reply.reasoning]
        chunks = [chunk([{"text": t}]) for t in reply.tokens]
        if reply.stream_error:
            tail = [
                f"data: {json.dumps({'error': {'code': 500, 'message': reply.stream_error, 'status': 'INTERNAL'}})}\r\n\r\n".encode()
            ]
        else:
            tail = [chunk(calls or [{"text": ""}], finish, with_usage=True)]
        return self._stream(reply, chunks, tail, lead)

    # ------------------------------------------------------------- llama.cpp

    async def _llamacpp(self, request: Request) -> Response:
        body, problems = await self._receive(request, schemas.check_llamacpp)
        reply = self._next()
        auth = request.headers.get("authorization", "")
        if not self._key_ok(auth.removeprefix("Bearer ") if auth else None):
            return JSONResponse(
                {
                    "error": {
                        "code": 401,
                        "message": "Invalid API Key",
                        "type": "authentication_error",
                    }
                },
                status_code=401,
            )
        if problems or reply.status is not None:
            status = 400 if problems else reply.status or 500
            message = "; ".join(problems) or reply.error_message
            return JSONResponse(
                {"error": {"code": status, "message": message, "type": "invalid_request_error"}},
                status_code=status,
            )
        final = {"content": "", "stop": True, "model": "stub", "tokens_predicted": len(reply.tokens),
                 "tokens_evaluated": reply.input_tokens, "stop_type": "limit" if reply.finish == "length" else "eos",
                 "stopped_limit": reply.finish == "length", "stopping_word": "", "timings": {}}  # fmt: skip
        if not body.get("stream"):
            return JSONResponse({**final, "content": reply.text})
        chunks = [
            self._sse({"content": t, "stop": False, "id_slot": 0, "index": 0}) for t in reply.tokens
        ]
        tail = (
            [self._sse({"error": {"code": 500, "message": reply.stream_error}})]
            if reply.stream_error
            else [self._sse(final)]
        )
        return self._stream(reply, chunks, tail)

    # --------------------------------------------------------------- KoboldCpp

    async def _kobold_check(self, request: Request) -> tuple[Any, Response | None, Reply]:
        body, problems = await self._receive(request, schemas.check_koboldcpp)
        reply = self._next()
        auth = request.headers.get("authorization", "")
        if not self._key_ok(auth.removeprefix("Bearer ") if auth else None):
            return (
                body,
                JSONResponse(
                    {
                        "detail": {
                            "error": "Authentication key is missing or invalid.",
                            "type": "invalid_key",
                        }
                    },
                    status_code=401,
                ),
                reply,
            )
        if problems:
            return (
                body,
                JSONResponse(
                    {"detail": {"msg": "; ".join(problems), "type": "bad_input"}}, status_code=422
                ),
                reply,
            )
        if reply.status is not None:
            return (
                body,
                JSONResponse(
                    {"detail": {"msg": reply.error_message, "type": "service_unavailable"}},
                    status_code=reply.status,
                ),
                reply,
            )
        return body, None, reply

    async def _kobold(self, request: Request) -> Response:
        _, failed, reply = await self._kobold_check(request)
        if failed:
            return failed
        return JSONResponse({"results": [{"text": reply.text, "finish_reason": reply.finish}]})

    async def _kobold_stream(self, request: Request) -> Response:
        _, failed, reply = await self._kobold_check(request)
        if failed:
            return failed
        chunks = [self._sse({"token": t, "finish_reason": None}, "message") for t in reply.tokens]
        return self._stream(
            reply, chunks, [self._sse({"token": "", "finish_reason": reply.finish}, "message")]
        )

    async def _kobold_model(self, request: Request) -> Response:
        return JSONResponse({"result": f"koboldcpp/{self.models[0]}"})


def main(argv: list[str] | None = None) -> None:
    """Run a stub in its own process: `python -m tests.stubs [--port N] [--key K]`.

    Prints its URL on the first line, then serves until killed. Tests in another
    process script it over HTTP: `POST /_stub/script` with a list of `Reply` fields,
    `POST /_stub/release`, `GET /_stub/state`.
    """
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--key", default=None)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds between tokens")
    args = parser.parse_args(argv)
    stub = StubServer(key=args.key)
    stub.default = Reply(delay=args.delay)
    stub.start(port=args.port)
    print(stub.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        stub.stop()


@contextmanager
def start_stub(
    key: str | None = None, models: tuple[str, ...] = ("stub-model",)
) -> Iterator[StubServer]:
    """A stub model server on a free port of 127.0.0.1, stopped on exit."""
    stub = StubServer(key=key, models=models).start()
    try:
        yield stub
    finally:
        stub.stop()


if __name__ == "__main__":
    main()
