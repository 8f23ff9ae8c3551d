"""Transports against local stub servers speaking each API's real wire protocol."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest

from taverna.model.prompt import Prompt, PromptMessage, Role
from taverna.providers.builders import build_request, stream_parser
from taverna.providers.events import (
    ErrorKind,
    Event,
    Finish,
    FinishReason,
    ReasoningDelta,
    StreamError,
    TextDelta,
    ToolCall,
    Usage,
)
from taverna.providers.request import Api, RequestOptions, ToolSpec
from taverna.providers.transport import Timeouts, redact, stream_events
from tests.stubs import Reply, StubServer

KEY = "sk-test-0123456789abcdef"
CHAT = Prompt(
    kind="chat",
    messages=(PromptMessage(Role.SYSTEM, "You are Aria."), PromptMessage(Role.USER, "Hello")),
    sampling={"temp_openai": 0.7, "openai_max_tokens": 100},
    stop=("\nUser:",),
)
TEXT = Prompt(kind="text", text="User: Hello\nAria:", sampling={"temp": 0.7, "genamt": 100})

pytestmark = pytest.mark.stub_model(key=KEY)


def run(
    stub: StubServer,
    api: Api,
    *,
    stream: bool = True,
    key: str = KEY,
    model: str = "stub-model",
    tools: tuple[ToolSpec, ...] = (),
    timeouts: Timeouts = Timeouts(),
    url: str | None = None,
) -> list[Event]:
    prompt = TEXT if api.is_text_completion else CHAT
    options = RequestOptions(model=model, stream=stream, tools=tools)
    request = build_request(prompt, api, options, base_url=url or stub.base_url(api.value), key=key)

    async def collect() -> list[Event]:
        return [
            e
            async for e in stream_events(request, stream_parser(api), secret=key, timeouts=timeouts)
        ]

    return asyncio.run(collect())


def text_of(events: list[Event]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("api", list(Api), ids=[a.value for a in Api])
def test_every_api_gives_the_text_and_a_finish(stub: StubServer, api: Api, stream: bool) -> None:
    stub.script(Reply(tokens=["Hel", "lo ", "there", "."]))
    before = len(stub.requests)
    events = run(stub, api, stream=stream)
    assert text_of(events) == "Hello there."
    assert events[-1] == Finish(FinishReason.STOP, events[-1].raw)  # type: ignore[union-attr]
    seen = stub.requests[before:]
    assert len(seen) == 1 and seen[0].problems == []
    if api not in (Api.KOBOLDCPP, Api.OPENAI_TEXT, Api.OPENAI_COMPATIBLE) or not stream:
        usage = [e for e in events if isinstance(e, Usage)]
        if api not in (Api.KOBOLDCPP, Api.OPENAI_TEXT):
            assert usage and usage[-1].input_tokens == 12


@pytest.mark.parametrize("api", list(Api), ids=[a.value for a in Api])
def test_a_wrong_key_is_reported_without_the_key(stub: StubServer, api: Api) -> None:
    wrong = "sk-wrong-9876543210fedcba"
    events = run(stub, api, key=wrong)
    assert len(events) == 1
    error = events[0]
    assert isinstance(error, StreamError) and error.kind is ErrorKind.AUTH
    assert "key" in error.message
    assert wrong not in error.message and wrong[-8:] not in error.message


@pytest.mark.parametrize("api", [Api.OPENAI, Api.ANTHROPIC, Api.GOOGLE])
def test_an_unknown_model_is_reported_as_not_found(stub: StubServer, api: Api) -> None:
    events = run(stub, api, model="no-such-model")
    assert isinstance(events[-1], StreamError)
    assert events[-1].kind is ErrorKind.NOT_FOUND
    assert "no-such-model" in events[-1].message


@pytest.mark.parametrize(
    ("status", "message", "kind"),
    [
        (429, "Rate limit reached for requests", ErrorKind.RATE_LIMITED),
        (400, "This model's maximum context length is 8192 tokens", ErrorKind.CONTEXT_LENGTH),
        (500, "boom", ErrorKind.SERVER),
    ],
)
@pytest.mark.parametrize("api", [Api.OPENAI, Api.ANTHROPIC, Api.GOOGLE, Api.LLAMACPP])
def test_http_errors_say_what_went_wrong(
    stub: StubServer, api: Api, status: int, message: str, kind: ErrorKind
) -> None:
    stub.script(Reply(status=status, error_message=message))
    events = run(stub, api)
    assert len(events) == 1 and isinstance(events[0], StreamError)
    assert events[0].kind is kind and events[0].status == status
    assert message in events[0].message


@pytest.mark.parametrize("api", list(Api), ids=[a.value for a in Api])
def test_a_stream_cut_in_the_middle_keeps_the_text_and_reports_it(
    stub: StubServer, api: Api
) -> None:
    stub.script(Reply(tokens=["one ", "two ", "three ", "four"], cut_after=3))
    events = run(stub, api)
    error = events[-1]
    assert isinstance(error, StreamError) and error.kind is ErrorKind.INTERRUPTED
    assert "one " in text_of(events)
    assert not any(isinstance(e, Finish) for e in events)


@pytest.mark.parametrize("api", [a for a in Api if a is not Api.KOBOLDCPP], ids=lambda a: a.value)
def test_a_body_that_ends_without_its_final_event_is_interrupted(
    stub: StubServer, api: Api
) -> None:
    stub.script(Reply(tokens=["one ", "two ", "three"], end_after=2))
    events = run(stub, api)
    assert isinstance(events[-1], StreamError)
    assert events[-1].kind is ErrorKind.INTERRUPTED


@pytest.mark.parametrize(
    "api", [Api.OPENAI, Api.ANTHROPIC, Api.GOOGLE, Api.LLAMACPP, Api.OPENAI_TEXT]
)
def test_an_error_event_mid_stream_follows_the_partial_text(stub: StubServer, api: Api) -> None:
    stub.script(Reply(tokens=["partial"], stream_error="Overloaded"))
    events = run(stub, api)
    assert text_of(events) == "partial"
    assert isinstance(events[-1], StreamError) and "Overloaded" in events[-1].message


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("api", [Api.OPENAI, Api.ANTHROPIC, Api.GOOGLE])
def test_tool_calls_and_reasoning_are_assembled(stub: StubServer, api: Api, stream: bool) -> None:
    stub.script(
        Reply(
            tokens=["Rolling."], reasoning=["Need ", "dice."], tool_calls=[("roll", {"sides": 20})]
        )
    )
    tool = ToolSpec(
        "roll", "Roll a die", {"type": "object", "properties": {"sides": {"type": "integer"}}}
    )
    events = run(stub, api, stream=stream, tools=(tool,))
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert len(calls) == 1 and calls[0].name == "roll"
    assert json.loads(calls[0].arguments) == {"sides": 20}
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "Need dice."
    assert isinstance(events[-1], Finish) and events[-1].reason is FinishReason.TOOL_CALLS
    assert stub.requests[-1].problems == []


def test_a_silent_server_times_out(stub: StubServer) -> None:
    stub.script(Reply(first_delay=1.0))
    events = run(stub, Api.OPENAI, timeouts=Timeouts(connect=2, read=0.2))
    assert isinstance(events[-1], StreamError) and events[-1].kind is ErrorKind.TIMEOUT


def test_nothing_listening_is_a_network_error(stub: StubServer) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    events = run(stub, Api.OPENAI, url=f"http://127.0.0.1:{port}/v1")
    assert isinstance(events[-1], StreamError) and events[-1].kind is ErrorKind.NETWORK


def test_cancelling_the_consumer_closes_the_connection(stub: StubServer) -> None:
    stub.script(Reply(tokens=[f"t{i} " for i in range(50)], hold_after=2))
    request = build_request(
        CHAT,
        Api.OPENAI,
        RequestOptions(model="stub-model"),
        base_url=stub.base_url("openai"),
        key=KEY,
    )
    seen: list[Event] = []
    before = stub.disconnects

    async def consume() -> None:
        async for event in stream_events(request, stream_parser(Api.OPENAI), secret=KEY):
            seen.append(event)

    async def main() -> None:
        task = asyncio.create_task(consume())
        while len([e for e in seen if isinstance(e, TextDelta)]) < 2:
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(200):
            if stub.disconnects > before:
                break
            await asyncio.sleep(0.01)

    asyncio.run(main())
    stub.release()
    assert text_of(seen) == "t0 t1 "
    assert stub.disconnects == before + 1


def test_redact_masks_the_key_and_pieces_of_it() -> None:
    assert redact(f"key {KEY} bad", KEY) == "key *** bad"
    assert KEY[4:12] not in redact(f"...{KEY[4:12]}...", KEY)
    assert redact("nothing here", "") == "nothing here"


TRICKY = ["行く", "\n\n", "data: [DONE]", "😀", " \r\n", "event: error", '{"a": 1}', "\\n"]


@pytest.mark.parametrize("api", list(Api), ids=[a.value for a in Api])
def test_any_text_survives_the_wire_unchanged(stub: StubServer, api: Api) -> None:
    stub.script(Reply(tokens=TRICKY))
    events = run(stub, api)
    assert text_of(events) == "".join(TRICKY)
    assert isinstance(events[-1], Finish)


def test_rate_limit_says_how_long_to_wait(stub: StubServer) -> None:
    stub.script(Reply(status=429, error_message="Slow down"))
    events = run(stub, Api.OPENAI)
    assert isinstance(events[0], StreamError) and "try again in 20 s" in events[0].message


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        # data that is no JSON, then the end marker
        (
            ["data: <html>busy</html>\n\n", "data: try later\n\n", "data: [DONE]\n\n"],
            "<html>busy</html>",
        ),
        # data that is no JSON, and the body just ends
        (["data: not json at all\n\n"], "not json at all"),
        # lines that are no server-sent events
        (["Internal error, see the log\n", "goodbye\n"], "Internal error, see the log"),
    ],
    ids=["then-done", "then-end", "no-events"],
)
@pytest.mark.parametrize("api", [Api.OPENAI, Api.ANTHROPIC, Api.GOOGLE, Api.LLAMACPP], ids=str)
def test_a_stream_with_no_reply_but_other_things_is_an_error_naming_them(
    stub: StubServer, api: Api, raw: list[str], named: str
) -> None:
    stub.script(Reply(raw=raw))
    events = run(stub, api)
    assert not any(isinstance(e, TextDelta | Finish) for e in events), events
    error = events[-1]
    assert isinstance(error, StreamError) and error.kind is ErrorKind.PROTOCOL
    assert "sent no reply" in error.message and named in error.message


def test_an_empty_reply_in_the_api_s_own_words_is_still_an_empty_reply(stub: StubServer) -> None:
    stub.script(Reply(tokens=[]))
    events = run(stub, Api.OPENAI)
    assert isinstance(events[-1], Finish) and text_of(events) == ""


def test_a_key_with_characters_http_cannot_carry_is_refused_before_sending(
    stub: StubServer,
) -> None:
    before = stub.request_count
    events = run(stub, Api.OPENAI, key="sk-ключ-0123456789")
    error = events[-1]
    assert isinstance(error, StreamError) and error.kind is ErrorKind.BAD_REQUEST
    assert "cannot carry" in error.message and "ключ" not in error.message
    assert stub.request_count == before
