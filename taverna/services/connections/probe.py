"""Testing a connection: one tiny real request, and what came of it.

The test goes out the way every model request does (`ConnectionService.stream`: the
account's quota, the outbound policy), so a test that passes means a turn can reach the
model. A failure names the part of the way that failed, for a page to say what to fix.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from taverna.errors import TavernaError
from taverna.model.prompt import Prompt, PromptMessage, Role
from taverna.providers.builders import build_request, stream_parser
from taverna.providers.events import Event, StreamError, TextDelta
from taverna.providers.request import HttpRequest, RequestOptions
from taverna.providers.transport import Timeouts, redact
from taverna.providers.wire import StreamParser
from taverna.services.connections.connection import Connection


class ModelWay(Protocol):
    """The way every model request goes out (`ConnectionService`), as a test uses it."""

    async def endpoint(self, connection: Connection) -> tuple[str, str]: ...

    def request_options(self, connection: Connection, **overrides: Any) -> RequestOptions: ...

    def stream(
        self,
        request: HttpRequest,
        parser: StreamParser,
        *,
        secret: str = "",
        timeouts: Timeouts = ...,
    ) -> AsyncIterator[Event]: ...


_ASK = "Reply with the word OK."
# Enough for "OK" under any of SillyTavern's names of the reply's length.
_SAMPLING = {"openai_max_tokens": 16, "genamt": 16}


@dataclass(frozen=True, slots=True)
class ConnectionTest:
    """The outcome of `ConnectionService.test`: ok, what the model said, how long it took."""

    ok: bool
    message: str
    seconds: float
    # Why it failed, for a page to say in its language: the model API's failure kind
    # (`cause`), or the code of the error that stopped it before any request (`code`).
    cause: str | None = None
    code: str | None = None
    params: dict[str, str | int] = field(default_factory=dict)
    # Which part failed: dns, tls, refused (nothing listens), network, auth, model,
    # timeout or api (the API answered with an error of its own); see `failed_part`
    part: str | None = None


def failed_part(kind: str, message: str) -> str:
    """Which part of reaching a model failed, from a stream error's kind and words
    (outbound.describe_failure names DNS, TLS and a refused connection)."""
    if kind == "network":
        if "(DNS)" in message:
            return "dns"
        if "TLS" in message:
            return "tls"
        return "refused" if "refused the connection" in message else "network"
    return {"auth": "auth", "not_found": "model", "timeout": "timeout"}.get(kind, "api")


def _prompt(connection: Connection) -> Prompt:
    """The one-line question, as a text or as a chat message after the connection's API."""
    if connection.api.is_text_completion:
        return Prompt(kind="text", text=f"{_ASK}\n", sampling=dict(_SAMPLING))
    message = PromptMessage(Role.USER, _ASK)
    return Prompt(kind="chat", messages=(message,), sampling=dict(_SAMPLING))


async def probe(
    service: ModelWay, connection: Connection, timeouts: Timeouts | None = None
) -> ConnectionTest:
    """Send `connection` a tiny real request and report whether an answer came back."""
    started = time.perf_counter()
    try:
        base_url, key = await service.endpoint(connection)
    except TavernaError as exc:
        return ConnectionTest(
            False, exc.message, time.perf_counter() - started, code=exc.code, params=exc.params
        )
    request = build_request(
        _prompt(connection),
        connection.api,
        service.request_options(connection, stream=False),
        base_url=base_url,
        key=key,
    )
    text: list[str] = []
    async for event in service.stream(
        request,
        stream_parser(connection.api),
        secret=key,
        timeouts=timeouts or Timeouts(connect=10, read=60),
    ):
        if isinstance(event, TextDelta):
            text.append(event.text)
        elif isinstance(event, StreamError):
            return ConnectionTest(
                False,
                event.message,
                time.perf_counter() - started,
                cause=event.kind.value,
                part=failed_part(event.kind.value, event.message),
            )
    said = redact("".join(text).strip(), key)
    return ConnectionTest(True, said or "(empty answer)", time.perf_counter() - started)
