"""Prompt caching: Claude's cache breakpoints where SillyTavern puts them, and the cached
part of a prompt read from each API's usage as it reports it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from taverna.model.prompt import Prompt, PromptMessage, Role
from taverna.providers import anthropic
from taverna.providers.builders import build_request, request_body, stream_parser
from taverna.providers.events import Event, Usage
from taverna.providers.request import Api, RequestOptions
from taverna.providers.transport import stream_events
from taverna.services.connections.fields import cache_depth
from tests.stubs.model_server import Reply, StubServer

KEY = "sk-cache"
pytestmark = pytest.mark.stub_model(key=KEY, models=("claude-3-5-sonnet", "deepseek-chat"))

EPHEMERAL = {"type": "ephemeral"}


def _chat(*turns: tuple[Role, str]) -> Prompt:
    return Prompt(
        kind="chat",
        messages=(
            PromptMessage(Role.SYSTEM, "You are Aria."),
            *(PromptMessage(r, t) for r, t in turns),
        ),
        sampling={"openai_max_tokens": 40},
    )


HISTORY = (
    (Role.USER, "one"),
    (Role.ASSISTANT, "two"),
    (Role.USER, "three"),
    (Role.ASSISTANT, "four"),
    (Role.USER, "five"),
)


def _marked(body: dict[str, Any]) -> list[str]:
    """The text of every message block carrying a breakpoint, in order."""
    return [
        block["text"]
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("cache_control") == EPHEMERAL
    ]


def test_the_system_prompt_is_one_cached_block_when_asked() -> None:
    options = RequestOptions(model="claude-3-5-sonnet", use_system_prompt=True)
    plain = request_body(_chat(*HISTORY), Api.ANTHROPIC, options)
    assert plain["system"] == "You are Aria."
    cached = request_body(
        _chat(*HISTORY),
        Api.ANTHROPIC,
        RequestOptions(**{**_fields(options), "cache_system_prompt": True}),
    )
    assert cached["system"] == [
        {"type": "text", "text": "You are Aria.", "cache_control": EPHEMERAL}
    ]
    assert _marked(cached) == []  # no depth asked: the history has no breakpoint


def _fields(options: RequestOptions) -> dict[str, Any]:
    return {name: getattr(options, name) for name in options.__slots__}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("depth", "marked"),
    [
        (0, ["three", "five"]),  # depth 0 is the last turn, depth 2 two speakers before
        (2, ["one", "three"]),
        (1, ["two", "four"]),
        (4, ["one"]),  # depth 6 lies beyond the history's start
    ],
)
def test_history_breakpoints_at_the_depth_and_two_speakers_before(
    depth: int, marked: list[str]
) -> None:
    options = RequestOptions(
        model="claude-3-5-sonnet", use_system_prompt=True, cache_at_depth=depth
    )
    body = request_body(_chat(*HISTORY), Api.ANTHROPIC, options)
    # the turns marked are the ones at `depth` and `depth + 2`, oldest first
    assert _marked(body) == sorted(marked, key=["one", "two", "three", "four", "five"].index)


def test_a_trailing_prefill_does_not_count_and_is_never_cached() -> None:
    options = RequestOptions(model="claude-3-5-sonnet", use_system_prompt=True, cache_at_depth=0)
    prompt = Prompt(
        kind="chat",
        messages=tuple(PromptMessage(r, t) for r, t in ((Role.SYSTEM, "You are Aria."), *HISTORY)),
        sampling={},
        prefill="Aria:",
    )
    body = request_body(prompt, Api.ANTHROPIC, options)
    assert body["messages"][-1] == {"role": "assistant", "content": "Aria:"}
    assert _marked(body) == ["three", "five"]


def test_a_depth_option_is_a_whole_number_from_zero_or_none() -> None:
    assert [cache_depth(v) for v in (0, 2, "3", -1, None, "x", 2.5, True, "-2")] == [
        0, 2, 3, -1, -1, -1, -1, -1, -1,
    ]  # fmt: skip


def _ask(stub: StubServer, api: Api, options: RequestOptions, prompt: Prompt) -> list[Event]:
    async def main() -> list[Event]:
        request = build_request(prompt, api, options, base_url=stub.base_url(api.value), key=KEY)
        return [e async for e in stream_events(request, stream_parser(api))]

    return asyncio.run(main())


def _usage(events: list[Event]) -> Usage:
    found = [e for e in events if isinstance(e, Usage)]
    assert len(found) == 1
    return found[0]


@pytest.mark.parametrize("stream", [True, False])
def test_claude_reports_what_its_cache_gave_on_the_next_turn(
    stub: StubServer, stream: bool
) -> None:
    stub.prompt_cache.clear()
    options = RequestOptions(
        model="claude-3-5-sonnet",
        use_system_prompt=True,
        cache_system_prompt=True,
        cache_at_depth=0,
        stream=stream,
    )
    first = _usage(_ask(stub, Api.ANTHROPIC, options, _chat(*HISTORY)))
    sent = stub.requests[-1]
    assert sent.problems == []
    assert first.cached_tokens == 0 and first.cache_write_tokens and first.cache_write_tokens > 0
    assert first.input_tokens is not None and first.input_tokens >= first.cache_write_tokens
    # the next turn: the reply and a new message; the breakpoint two speakers back is read
    later = _chat(*HISTORY, (Role.ASSISTANT, "six"), (Role.USER, "seven"))
    second = _usage(_ask(stub, Api.ANTHROPIC, options, later))
    assert second.cached_tokens is not None and second.cached_tokens > 0
    assert second.input_tokens is not None and second.input_tokens > second.cached_tokens
    assert second.cached_tokens == first.cache_write_tokens  # all that was written is read


def test_without_breakpoints_claude_reports_no_cache(stub: StubServer) -> None:
    options = RequestOptions(model="claude-3-5-sonnet", use_system_prompt=True)
    usage = _usage(_ask(stub, Api.ANTHROPIC, options, _chat(*HISTORY)))
    assert (usage.input_tokens, usage.cached_tokens, usage.cache_write_tokens) == (12, None, None)


@pytest.mark.parametrize(
    ("style", "stream"), [("openai", True), ("openai", False), ("deepseek", True)]
)
def test_openai_style_usage_gives_the_cached_part(
    stub: StubServer, style: str, stream: bool
) -> None:
    stub.script(Reply(input_tokens=900, cached_tokens=768, cache_usage=style))
    api = Api.OPENAI if style == "openai" else Api.OPENAI_COMPATIBLE
    options = RequestOptions(model="deepseek-chat", stream=stream)
    usage = _usage(_ask(stub, api, options, _chat(*HISTORY)))
    assert (usage.input_tokens, usage.cached_tokens, usage.cache_write_tokens) == (900, 768, None)
    usage_sent = json.dumps(stub.requests[-1].body)
    assert "cache_control" not in usage_sent


def test_more_than_four_breakpoints_are_refused_by_the_stub_as_by_the_api(stub: StubServer) -> None:
    body = request_body(
        _chat(*HISTORY), Api.ANTHROPIC, RequestOptions(model="claude-3-5-sonnet", cache_at_depth=0)
    )
    for message in body["messages"]:
        anthropic._mark_last_block(message)
    from tests.stubs import schemas

    assert any("maximum of 4" in p for p in schemas.check_anthropic(body))


def test_the_command_line_sets_the_cache_options() -> None:
    from taverna.cli.connection import parse_options

    assert parse_options(["cache_system_prompt=true", "caching_at_depth=2"]) == {
        "cache_system_prompt": True,
        "caching_at_depth": 2,
    }


def test_openrouter_claude_gets_the_breakpoints_as_sillytavern_puts_them_there() -> None:
    options = RequestOptions(
        model="anthropic/claude-3.5-sonnet",
        source="openrouter",
        cache_system_prompt=True,
        cache_at_depth=0,
    )
    body = request_body(_chat(*HISTORY), Api.OPENAI_COMPATIBLE, options)
    marked = [
        (m["role"], m["content"][0]["text"])
        for m in body["messages"]
        if isinstance(m["content"], list) and m["content"][0].get("cache_control") == EPHEMERAL
    ]
    assert marked == [("system", "You are Aria."), ("user", "three"), ("user", "five")]
    # another model on OpenRouter, or Claude elsewhere, is sent as before
    other = request_body(
        _chat(*HISTORY),
        Api.OPENAI_COMPATIBLE,
        RequestOptions(**{**_fields(options), "model": "x/llama"}),
    )
    assert "cache_control" not in json.dumps(other)
