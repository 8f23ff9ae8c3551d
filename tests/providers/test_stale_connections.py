"""A model server that closes a kept-alive connection as the next request goes out on it
(its idle time-out, met at that moment): the request goes again on a new connection,
as a browser sends it, and the reply comes through. A request that fails on a new
connection, or one the server held a while before dropping, is not sent twice."""

from __future__ import annotations

import asyncio
import json

import pytest

from taverna.model.prompt import Prompt, PromptMessage, Role
from taverna.providers import transport
from taverna.providers.builders import build_request, stream_parser
from taverna.providers.events import ErrorKind, Event, Finish, StreamError, TextDelta
from taverna.providers.request import Api, RequestOptions

PROMPT = Prompt(kind="chat", messages=(PromptMessage(Role.USER, "Hello"),))
WORDS = ["Kept ", "alive."]


def _answer() -> bytes:
    chunks = [
        {"choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]}
        for word in WORDS
    ]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    body = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    data = body.encode()
    head = (
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        f"content-length: {len(data)}\r\nconnection: keep-alive\r\n\r\n"
    )
    return head.encode() + data


class KeepAliveServer:
    """Answers requests on kept-alive connections; the request numbered in `drop` (counted
    over the server's life, from 1) is read and its connection closed with no answer,
    after `hold` seconds."""

    def __init__(self, drop: set[int], hold: float = 0.0) -> None:
        self.drop = drop
        self.hold = hold
        self.requests = 0
        self.connections = 0
        self.server: asyncio.Server | None = None

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    async def close(self) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.decode().split("\r\n"):
                    name, _, value = line.partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                await reader.readexactly(length)
                self.requests += 1
                if self.requests in self.drop:
                    await asyncio.sleep(self.hold)
                    return
                writer.write(_answer())
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()


def _turns(server: KeepAliveServer, count: int) -> list[list[Event]]:
    """`count` streams one after another over one model session, as a server sends them."""

    async def go() -> list[list[Event]]:
        url = await server.start()
        request = build_request(PROMPT, Api.OPENAI, RequestOptions(model="m"), base_url=url)
        session = transport.model_session()
        try:
            found = []
            for _ in range(count):
                events = transport.stream_events(request, stream_parser(Api.OPENAI), client=session)
                found.append([event async for event in events])
            return found
        finally:
            await session.close()
            await server.close()

    return asyncio.run(go())


def _text(events: list[Event]) -> str:
    return "".join(event.text for event in events if isinstance(event, TextDelta))


def test_a_kept_alive_connection_closed_under_a_request_is_sent_again_on_a_new_one() -> None:
    server = KeepAliveServer(drop={2})
    first, second = _turns(server, 2)
    assert _text(first) == _text(second) == "".join(WORDS)
    assert isinstance(second[-1], Finish)
    # the second request went out on the first connection, then again on a new one
    assert (server.requests, server.connections) == (3, 2)


def test_a_request_failing_on_a_new_connection_is_not_sent_again() -> None:
    server = KeepAliveServer(drop={1})
    [events] = _turns(server, 1)
    assert isinstance(events[-1], StreamError)
    assert events[-1].kind is ErrorKind.NETWORK
    assert (server.requests, server.connections) == (1, 1)


def test_a_request_the_server_held_before_dropping_is_not_sent_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(transport, "STALE_WITHIN", 0.2)
    server = KeepAliveServer(drop={2}, hold=0.4)
    first, second = _turns(server, 2)
    assert _text(first) == "".join(WORDS)
    assert isinstance(second[-1], StreamError)
    assert second[-1].kind is ErrorKind.NETWORK
    assert (server.requests, server.connections) == (2, 1)


def test_retries_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transport, "STALE_RETRIES", 0)
    server = KeepAliveServer(drop={2})
    first, second = _turns(server, 2)
    assert _text(first) == "".join(WORDS)
    assert isinstance(second[-1], StreamError)
    assert (server.requests, server.connections) == (2, 1)
