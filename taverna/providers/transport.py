"""Sending a request and streaming the answer back as normalised events (httpx; the
event stream decoded by `event_stream`)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

from taverna.errors import ProviderError
from taverna.providers.event_stream import EventStreamDecoder
from taverna.providers.events import (
    ErrorKind,
    Event,
    Finish,
    ReasoningDelta,
    StreamError,
    TextDelta,
    ToolCall,
)
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
                watch = StreamWatch()
                decoder = EventStreamDecoder()
                async for chunk in response.aiter_bytes():
                    watch.tap(chunk)
                    for sse in decoder.feed(chunk):
                        started = True
                        events = parser.feed(sse.event, sse.data)
                        watch.saw(sse.data, events)
                        for event in events:
                            if isinstance(event, Finish) and watch.said_nothing():
                                yield watch.error(request.url)
                                return
                            yield event
                        if parser.finished:
                            return
                if watch.said_nothing():
                    yield watch.error(request.url)
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
    except (httpx.InvalidURL, UnicodeEncodeError) as exc:
        # A URL or a key stored before they were checked: say which, never crash the turn.
        yield StreamError(ErrorKind.BAD_REQUEST, f"the request cannot be sent: {_unsendable(exc)}")


def _unsendable(exc: Exception) -> str:
    if isinstance(exc, UnicodeEncodeError):
        return "a header (the API key) holds characters HTTP cannot carry; give the key again"
    return f"the connection's URL is not valid ({exc})"


class StreamWatch:
    """What an event stream held besides the reply: pieces that were not JSON, and the
    first bytes of the body, so a stream that carried no reply ends as an error naming
    what came back instead of an empty reply."""

    KEEP = 200

    def __init__(self) -> None:
        self.events = 0
        self.not_json = 0
        self.first_not_json = ""
        self.replied = False
        self.head = bytearray()

    def tap(self, chunk: bytes) -> None:
        """Keep the body's first bytes."""
        if len(self.head) < self.KEEP:
            self.head += chunk[: self.KEEP - len(self.head)]

    def saw(self, data: str, events: list[Event]) -> None:
        """Note one event's data and what the parser made of it."""
        self.events += 1
        if self.replied:
            return  # the stream carried a reply: what else it held is never said
        if any(isinstance(e, TextDelta | ReasoningDelta | ToolCall) for e in events):
            self.replied = True
        elif not events and data.strip() and data.strip() != "[DONE]" and not _is_json(data):
            self.not_json += 1
            self.first_not_json = self.first_not_json or data.strip()[: self.KEEP]

    def said_nothing(self) -> bool:
        """The stream is over (or says so) with no reply, and it held something else."""
        if self.replied:
            return False
        return self.not_json > 0 or (self.events == 0 and bool(self.head.strip()))

    def error(self, url: str) -> StreamError:
        if self.not_json:
            what = (
                f"{self.not_json} piece(s) of data that are not JSON, the first: "
                f"{self.first_not_json!r}"
            )
        else:
            text = bytes(self.head).decode("utf-8", "replace").strip()
            what = f"no event it could read; it began: {text!r}"
        return StreamError(ErrorKind.PROTOCOL, f"the model API at {url} sent no reply, only {what}")


def _is_json(data: str) -> bool:
    try:
        json.loads(data)
    except json.JSONDecodeError:
        return False
    return True


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
        raise ProviderError(
            f"timed out waiting for {request.url}",
            code="timed_out_waiting_for",
            params={"url": str(request.url)},
        ) from None
    except httpx.HTTPError as exc:
        raise ProviderError(
            redact(f"could not reach {request.url}: {exc}", secret),
            code="unreachable",
            params={"url": redact(str(request.url), secret), "exc": redact(str(exc), secret)},
        ) from None
    except (httpx.InvalidURL, UnicodeEncodeError) as exc:
        why = redact(_unsendable(exc), secret)
        raise ProviderError(
            redact(f"the request cannot be sent: {why}", secret),
            code="unsendable",
            params={"why": why},
        ) from None
    finally:
        if own:
            await http.aclose()
    if response.status_code >= 400:
        error = classify_status(response.status_code, _error_detail(response.content), request)
        raise ProviderError(
            redact(error.message, secret),
            code="api_refused",
            params={"status": response.status_code},
        )
    try:
        return response.json()
    except ValueError:
        raise ProviderError(
            f"the answer from {request.url} was not JSON",
            code="answer_from_was_not_json",
            params={"url": str(request.url)},
        ) from None
