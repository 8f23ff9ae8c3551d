"""Sending a request and streaming the answer back as normalised events.

A model's answer streams through aiohttp, whose C parser and plain asyncio reads cost a
token chunk less than half of what httpx's layers did: on a server carrying a hundred
streams that was a quarter of its CPU. The event stream is decoded by `event_stream`.
Short exchanges (`fetch_json`) stay on httpx.
"""

from __future__ import annotations

import asyncio
import functools
import json
import ssl
import time
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
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
from taverna.providers.json_lines import JsonLinesDecoder
from taverna.providers.outbound import (
    OutboundPolicy,
    PolicedConnector,
    describe_failure,
    policed_async_transport,
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

    def to_aiohttp(self) -> aiohttp.ClientTimeout:
        """aiohttp has no timeout for writing the request; the read one covers the answer."""
        return aiohttp.ClientTimeout(sock_connect=self.connect, sock_read=self.read)


@functools.cache
def _certificates() -> ssl.SSLContext:
    """The certificate authorities httpx trusts (SSL_CERT_FILE or SSL_CERT_DIR, else
    certifi's), so a model API reachable by one client is reachable by the other."""
    return httpx.create_ssl_context()


# How many times a request goes again after a kept-alive connection turned out closed,
# and how soon after sending that must show (see `_send`).
STALE_RETRIES = 2
STALE_WITHIN = 5.0


def model_session(policy: OutboundPolicy | None = None) -> aiohttp.ClientSession:
    """A client session for model streams, with no cap on connections at once (a server
    streams a reply per chat; a cap of 100 made the 101st wait and time out) and the proxy
    settings of the environment, as httpx reads them. Open it inside the event loop that
    uses it; each request gives its own timeouts. Under an outbound `policy` it connects
    only to the addresses the policy admits, and never through a proxy."""
    reuse = aiohttp.TraceConfig()
    reuse.on_connection_reuseconn.append(_mark_reused)
    connector: aiohttp.TCPConnector
    if policy is None:
        connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, ssl=_certificates())
    else:
        connector = PolicedConnector(policy, limit=0, limit_per_host=0, ssl=_certificates())
    return aiohttp.ClientSession(
        connector=connector,
        trust_env=policy is None,
        trace_configs=[reuse],
    )


async def _mark_reused(
    session: aiohttp.ClientSession, context: Any, params: aiohttp.TraceConnectionReuseconnParams
) -> None:
    """Note on the request's own mapping that it went out on a kept-alive connection."""
    marks = context.trace_request_ctx
    if isinstance(marks, dict):
        marks["reused"] = True


class ModelSessions:
    """One model session per event loop: an aiohttp session belongs to the loop that
    opened it, and a server may run its app in more than one (a test client each)."""

    def __init__(self) -> None:
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aiohttp.ClientSession]
        self._by_loop = weakref.WeakKeyDictionary()

    def open(self) -> None:
        """Open a session for the running loop, unless it has one."""
        loop = asyncio.get_running_loop()
        session = self._by_loop.get(loop)
        if session is None or session.closed:
            self._by_loop[loop] = model_session()

    def current(self) -> aiohttp.ClientSession | None:
        """The running loop's open session, if `open` gave it one."""
        session = self._by_loop.get(asyncio.get_running_loop())
        return session if session is not None and not session.closed else None

    async def close(self) -> None:
        """Close the running loop's session."""
        session = self._by_loop.pop(asyncio.get_running_loop(), None)
        if session is not None:
            await session.close()


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
    client: aiohttp.ClientSession | None = None,
    secret: str = "",
    timeouts: Timeouts = Timeouts(),
    policy: OutboundPolicy | None = None,
) -> AsyncIterator[Event]:
    """Send `request` and yield its answer as events; the last one is a Finish or a StreamError.

    Failures are yielded, not raised, and never contain `secret`. Cancelling the
    consuming task closes the connection, so the model stops writing. Without `client`,
    a session of its own is opened (under the outbound `policy`, if one is given; a
    `client` given must be one opened under that policy).
    """
    own = client is None
    http = client or model_session(policy)
    try:
        async for event in _exchange(http, request, parser, timeouts):
            if isinstance(event, StreamError):
                event = StreamError(event.kind, redact(event.message, secret), event.status)
            yield event
    finally:
        if own:
            await http.close()


def _body(request: HttpRequest) -> bytes:
    """The JSON body as httpx wrote it: compact, UTF-8, no NaN."""
    text = json.dumps(
        dict(request.body), ensure_ascii=False, separators=(",", ":"), allow_nan=False
    )
    return text.encode("utf-8")


async def _exchange(
    http: aiohttp.ClientSession, request: HttpRequest, parser: StreamParser, timeouts: Timeouts
) -> AsyncIterator[Event]:
    started = False
    try:
        headers = {"Content-Type": "application/json", **request.headers}
        if request.stream:
            headers["Accept"] = "text/event-stream"
        for value in headers.values():
            value.encode("ascii")  # what HTTP headers carry; a key pasted with more is refused
        async with await _send(http, request, headers, timeouts) as response:
            if response.status >= 400:
                raw = await response.read()
                yield classify_status(
                    response.status,
                    _error_detail(raw),
                    request,
                    response.headers.get("retry-after"),
                )
                return
            kind = response.headers.get("content-type", "")
            lines = "ndjson" in kind  # Ollama streams one JSON object a line
            if request.stream and ("text/event-stream" in kind or lines):
                watch = StreamWatch()
                decoder = JsonLinesDecoder() if lines else EventStreamDecoder()
                async for chunk in response.content.iter_any():
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
                raw = await response.read()
                try:
                    body = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError):
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
    except TimeoutError:
        what = "between two pieces of the answer" if started else "for the model's answer"
        yield StreamError(ErrorKind.TIMEOUT, f"timed out waiting {what} from {request.url}")
    except aiohttp.ClientConnectorError as exc:
        yield StreamError(ErrorKind.NETWORK, describe_failure(exc, request.url))
    except aiohttp.ClientResponseError as exc:
        # an answer that is not HTTP (a database's banner): said as such, never quoted
        yield StreamError(ErrorKind.PROTOCOL, describe_failure(exc, request.url))
    except (aiohttp.InvalidURL, UnicodeEncodeError) as exc:
        # A URL or a key stored before they were checked: say which, never crash the turn.
        yield StreamError(ErrorKind.BAD_REQUEST, f"the request cannot be sent: {_unsendable(exc)}")
    except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError) as exc:
        if started:
            yield StreamError(
                ErrorKind.INTERRUPTED,
                f"the connection broke in the middle of the answer: {_said(exc)}",
            )
        else:
            yield StreamError(ErrorKind.NETWORK, describe_failure(exc, request.url))
    except aiohttp.ClientError as exc:
        yield StreamError(ErrorKind.NETWORK, describe_failure(exc, request.url))


async def _send(
    http: aiohttp.ClientSession,
    request: HttpRequest,
    headers: dict[str, str],
    timeouts: Timeouts,
) -> aiohttp.ClientResponse:
    """Send the request and wait for the answer's head.

    A server closes a connection it kept alive once it has been idle a while (uvicorn,
    llama.cpp's server and Node after 5 s, the client keeps it 15 s); one that closes it
    as a request goes out leaves that request unanswered. Browsers send it again on a new
    connection, and so does this, but only when the failed attempt went out on a reused
    connection and failed with nothing of an answer within STALE_WITHIN seconds: the sign
    of a connection closed before the request reached it, not of a request the server
    took and dropped (that one is not sent twice).
    """
    body = _body(request)
    retries = 0
    while True:
        marks: dict[str, bool] = {"reused": False}
        sent = time.monotonic()
        try:
            return await http.request(
                request.method,
                request.url,
                data=body,
                headers=headers,
                timeout=timeouts.to_aiohttp(),
                allow_redirects=False,
                trace_request_ctx=marks,
            )
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
            stale = marks["reused"] and time.monotonic() - sent < STALE_WITHIN
            if not stale or retries >= STALE_RETRIES:
                raise
            retries += 1


def _said(exc: Exception) -> str:
    """An exception's words, or its kind when it has none (a server that hung up)."""
    return str(exc) or type(exc).__name__


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
    policy: OutboundPolicy | None = None,
) -> Any:
    """GET a JSON document (a model listing); failures raise ProviderError without the key
    (and without what a peer that does not speak HTTP sent). Under the outbound `policy`
    its connection goes only where the policy admits."""
    own = client is None
    if client is not None:
        http = client
    elif policy is None:
        http = httpx.AsyncClient(timeout=timeouts.to_httpx())
    else:
        transport = policed_async_transport(policy, _certificates())
        http = httpx.AsyncClient(timeout=timeouts.to_httpx(), transport=transport)
    try:
        response = await http.request(request.method, request.url, headers=dict(request.headers))
    except httpx.TimeoutException:
        raise ProviderError(
            f"timed out waiting for {request.url}",
            code="timed_out_waiting_for",
            params={"url": str(request.url)},
        ) from None
    except (httpx.HTTPError, OSError) as exc:
        said = describe_failure(exc, request.url)
        raise ProviderError(
            redact(said, secret),
            code="unreachable",
            params={"url": redact(str(request.url), secret), "exc": redact(said, secret)},
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
