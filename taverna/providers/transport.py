"""Sending a request and streaming the answer back as normalised events (httpx + httpx-sse)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
from httpx_sse import EventSource

from taverna.errors import ProviderError
from taverna.providers.events import ErrorKind, Event, StreamError
from taverna.providers.request import HttpRequest
from taverna.providers.wire import StreamParser


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds to wait: to connect, and between two pieces of the answer.

    `read` is long by default because a local model may think for minutes over a long
    prompt before its first token.
    """

    connect: float = 10.0
    read: float = 300.0
    write: float = 30.0

    def to_httpx(self) -> httpx.Timeout:
        return httpx.Timeout(self.connect, read=self.read, write=self.write, pool=self.connect)


def redact(text: str, secret: str) -> str:
    """The text with the key, and any 8-character piece of it, masked."""
    if not secret:
        return text
    text = text.replace(secret, "***")
    window = 8
    if len(secret) >= window:
        for i in range(len(secret) - window + 1):
            piece = secret[i : i + window]
            if piece in text:
                text = text.replace(piece, "***")
    return text


def _error_detail(raw: bytes) -> str:
    """The provider's own words from an error body (JSON `error.message` and the like)."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        payload: Any = json.loads(text)
    except json.JSONDecodeError:
        return text[:500]
    if isinstance(payload, list) and payload:
        payload = payload[0]
    if isinstance(payload, dict):
        error = payload.get("error", payload.get("detail", payload))
        if isinstance(error, dict):
            message = error.get("message") or error.get("msg") or error.get("type")
            if message:
                return str(message)[:500]
        elif isinstance(error, str):
            return error[:500]
    return text[:500]


_CONTEXT_HINTS = ("context", "too long", "too many tokens", "maximum length", "exceeds")


def classify_status(
    status: int, detail: str, request: HttpRequest, retry_after: str | None = None
) -> StreamError:
    """A person-readable error for an HTTP failure status."""
    said = f": {detail}" if detail else ""
    model = request.body.get("model") if isinstance(request.body, dict) else None
    if status in (401, 403) or (status == 400 and "api key" in detail.lower()):
        # Google answers a bad key with 400 INVALID_ARGUMENT
        return StreamError(
            ErrorKind.AUTH,
            f"the API key was refused (HTTP {status}); check the connection's key{said}",
            status,
        )
    if status == 404:
        what = f"model {model!r} or " if model else ""
        return StreamError(
            ErrorKind.NOT_FOUND,
            f"{what}endpoint {request.url} not found (HTTP 404){said}",
            status,
        )
    if status == 429:
        return StreamError(
            ErrorKind.RATE_LIMITED,
            f"rate limited by the model API (HTTP 429); {_wait(retry_after)}{said}",
            status,
        )
    if status in (400, 413, 422):
        lowered = detail.lower()
        if status == 413 or any(hint in lowered for hint in _CONTEXT_HINTS):
            return StreamError(
                ErrorKind.CONTEXT_LENGTH,
                f"the prompt is longer than the model's context (HTTP {status}); "
                f"lower the context size in the preset{said}",
                status,
            )
        return StreamError(
            ErrorKind.BAD_REQUEST,
            f"the model API refused the request (HTTP {status}){said}",
            status,
        )
    return StreamError(ErrorKind.SERVER, f"the model API failed (HTTP {status}){said}", status)


def _wait(retry_after: str | None) -> str:
    """How long the API asks to wait, when it says so in seconds."""
    if retry_after and retry_after.strip().isdigit():
        return f"try again in {int(retry_after)} s"
    return "wait and try again"


async def stream_events(
    request: HttpRequest,
    parser: StreamParser,
    *,
    client: httpx.AsyncClient | None = None,
    secret: str = "",
    timeouts: Timeouts = Timeouts(),
) -> AsyncIterator[Event]:
    """Send `request` and yield its answer as events; the last one is a Finish or a StreamError.

    Failures are yielded, not raised, and never contain `secret`. Cancelling the
    consuming task closes the connection (the `async with` blocks unwind).
    """
    own = client is None
    http = client or httpx.AsyncClient(timeout=timeouts.to_httpx())
    try:
        async for event in _exchange(http, request, parser, timeouts):
            if isinstance(event, StreamError):
                event = StreamError(event.kind, redact(event.message, secret), event.status)
            yield event
    finally:
        if own:
            await http.aclose()


async def _exchange(
    http: httpx.AsyncClient, request: HttpRequest, parser: StreamParser, timeouts: Timeouts
) -> AsyncIterator[Event]:
    headers = {"Content-Type": "application/json", **request.headers}
    if request.stream:
        headers["Accept"] = "text/event-stream"
    started = False
    try:
        async with http.stream(
            request.method,
            request.url,
            json=dict(request.body),
            headers=headers,
            timeout=timeouts.to_httpx(),
        ) as response:
            if response.status_code >= 400:
                raw = await response.aread()
                yield classify_status(
                    response.status_code,
                    _error_detail(raw),
                    request,
                    response.headers.get("retry-after"),
                )
                return
            kind = response.headers.get("content-type", "")
            if request.stream and "text/event-stream" in kind:
                async for sse in EventSource(response).aiter_sse():
                    started = True
                    for event in parser.feed(sse.event, sse.data):
                        yield event
                    if parser.finished:
                        return
            else:
                raw = await response.aread()
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    yield StreamError(
                        ErrorKind.PROTOCOL,
                        f"the answer from {request.url} was not JSON ({kind or 'no content type'})",
                    )
                    return
                for event in parser.parse_response(body):
                    yield event
                return
        for event in parser.end():
            yield event
    except httpx.TimeoutException:
        what = "between two pieces of the answer" if started else "for the model's answer"
        yield StreamError(ErrorKind.TIMEOUT, f"timed out waiting {what} from {request.url}")
    except httpx.ConnectError as exc:
        yield StreamError(ErrorKind.NETWORK, f"could not connect to {request.url}: {exc}")
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        if started:
            yield StreamError(
                ErrorKind.INTERRUPTED, f"the connection broke in the middle of the answer: {exc}"
            )
        else:
            yield StreamError(ErrorKind.NETWORK, f"the connection to {request.url} failed: {exc}")
    except httpx.HTTPError as exc:
        yield StreamError(ErrorKind.NETWORK, f"the request to {request.url} failed: {exc}")


async def fetch_json(
    request: HttpRequest,
    *,
    client: httpx.AsyncClient | None = None,
    secret: str = "",
    timeouts: Timeouts = Timeouts(connect=5, read=15),
) -> Any:
    """GET a JSON document (a model listing); failures raise ProviderError without the key."""
    own = client is None
    http = client or httpx.AsyncClient(timeout=timeouts.to_httpx())
    try:
        response = await http.request(request.method, request.url, headers=dict(request.headers))
    except httpx.TimeoutException:
        raise ProviderError(f"timed out waiting for {request.url}") from None
    except httpx.HTTPError as exc:
        raise ProviderError(redact(f"could not reach {request.url}: {exc}", secret)) from None
    finally:
        if own:
            await http.aclose()
    if response.status_code >= 400:
        error = classify_status(response.status_code, _error_detail(response.content), request)
        raise ProviderError(redact(error.message, secret))
    try:
        return response.json()
    except ValueError:
        raise ProviderError(f"the answer from {request.url} was not JSON") from None
