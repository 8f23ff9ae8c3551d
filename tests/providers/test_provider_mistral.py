"""Mistral's message rules and request body (algo-providers.md §5), and its wire via the stub."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import taverna.cli.prompt  # noqa: F401 - registers the command
from taverna.cli.main import app
from taverna.model.prompt import Prompt, PromptMessage, Role
from taverna.providers.builders import build_request, request_body, stream_parser
from taverna.providers.events import Event, Finish, TextDelta, ToolCall, Usage
from taverna.providers.mistral import convert_messages
from taverna.providers.request import Api, RequestOptions, ToolSpec
from taverna.providers.transport import stream_events
from tests.stubs import Reply, StubServer
from tests.stubs.schemas import check_mistral_chat

KEY = "sk-mistral-test-0123456789"
OPTIONS = RequestOptions(model="mistral-large-latest", user_name="Alex", char_name="Aria")

pytestmark = pytest.mark.stub_model(key=KEY)


def m(role: Role, text: str, name: str = "") -> PromptMessage:
    return PromptMessage(role, text, name=name)


STORY = Prompt(
    kind="chat",
    messages=(
        m(Role.SYSTEM, "You are Aria."),
        m(Role.SYSTEM, "[Example Chat]"),
        m(Role.SYSTEM, "What is this place?", "example_user"),
        m(Role.SYSTEM, "Aria: The old library.", "example_assistant"),
        m(Role.SYSTEM, "[Start a new Chat]"),
        m(Role.ASSISTANT, "Welcome."),
        m(Role.SYSTEM, "[Aria is tired.]"),
        m(Role.SYSTEM, "[Night falls.]"),
        m(Role.USER, "Hello", "Alex"),
        m(Role.ASSISTANT, "Bob: hi there", "Bob"),
        m(Role.USER, "Bye"),
    ),
    sampling={
        "temp_openai": 0.7,
        "top_p_openai": 0.9,
        "openai_max_tokens": 300,
        "seed": 42,
        "freq_pen_openai": 0.5,
        "pres_pen_openai": 0.3,
        "top_k_openai": 40,
        "min_p_openai": 0.1,
    },
    stop=("\nAlex:",),
)


def test_names_fold_into_the_text_and_no_name_field_is_left() -> None:
    body = request_body(STORY, Api.MISTRAL, OPTIONS)
    messages = body["messages"]
    assert all(set(msg) == {"role", "content"} for msg in messages)
    texts = [msg["content"] for msg in messages]
    assert texts[2] == "Alex: What is this place?"  # §5.2 example speaker put in front
    assert texts[3] == "Aria: The old library."  # ... but only once
    assert texts[8] == "Alex: Hello"  # §5.3 a speaker's name goes into the text
    assert texts[9] == "Bob: hi there"  # ... unless it is there already


def test_a_system_message_after_a_reply_becomes_the_users_turn() -> None:
    roles = [msg["role"] for msg in request_body(STORY, Api.MISTRAL, OPTIONS)["messages"]]
    # §5.4: only the message right after the assistant one; the one after it stays system
    assert roles == [
        "system", "system", "system", "system", "system",
        "assistant", "user", "system",
        "user", "assistant", "user",
    ]  # fmt: skip


def test_conversion_leaves_its_input_alone() -> None:
    wire = [
        {"role": "assistant", "content": "hi", "name": "Bob"},
        {"role": "system", "content": "x"},
    ]
    before = json.dumps(wire)
    out = convert_messages(wire, "Alex", "Aria", prefix=True)
    assert json.dumps(wire) == before
    assert out == [{"role": "assistant", "content": "Bob: hi"}, {"role": "user", "content": "x"}]


def test_a_last_assistant_message_is_a_prefix_only_when_asked() -> None:
    prompt = Prompt(kind="chat", messages=(m(Role.USER, "Go on"), m(Role.ASSISTANT, "Once upon a")))
    plain = request_body(prompt, Api.MISTRAL, OPTIONS)["messages"]
    assert "prefix" not in plain[-1]  # algo-providers.md §5.1: off unless enabled
    on = RequestOptions(model="m", mistral_prefix=True)
    assert request_body(prompt, Api.MISTRAL, on)["messages"][-1] == {
        "role": "assistant",
        "content": "Once upon a",
        "prefix": True,
    }
    # a last user message is never marked
    user_last = Prompt(kind="chat", messages=(m(Role.USER, "Hi"),))
    assert "prefix" not in request_body(user_last, Api.MISTRAL, on)["messages"][-1]


def test_the_body_has_only_the_fields_mistral_takes() -> None:
    body = request_body(STORY, Api.MISTRAL, OPTIONS)
    # §5.5: samplers and stop strings Mistral is not sent are left out, not sent wrong
    assert {k: v for k, v in body.items() if k != "messages"} == {
        "model": "mistral-large-latest",
        "temperature": 0.7,
        "top_p": 0.9,
        "max_tokens": 300,
        "stream": True,
        "safe_prompt": False,
        "random_seed": 42,
    }
    assert check_mistral_chat(body) == []
    unseeded = Prompt(kind="chat", messages=STORY.messages, sampling={"seed": -1})
    assert "random_seed" not in request_body(unseeded, Api.MISTRAL, OPTIONS)


def test_a_required_tool_call_is_mistrals_any() -> None:
    tool = ToolSpec("roll", "Roll a die", {"type": "object", "properties": {}})
    required = RequestOptions(model="m", tools=(tool,), tool_choice="required")
    body = request_body(STORY, Api.MISTRAL, required)
    assert body["tool_choice"] == "any"
    assert body["tools"][0]["function"]["name"] == "roll"
    auto = RequestOptions(model="m", tools=(tool,))
    assert request_body(STORY, Api.MISTRAL, auto)["tool_choice"] == "auto"


def test_the_request_goes_to_mistrals_own_api_by_default() -> None:
    request = build_request(STORY, Api.MISTRAL, OPTIONS, key=KEY)
    assert request.url == "https://api.mistral.ai/v1/chat/completions"
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    assert Api.parse("mistralai") is Api.MISTRAL  # SillyTavern's source name


def test_the_openai_body_would_be_refused_by_mistral() -> None:
    """Why Mistral needs its own body: the OpenAI-compatible one breaks its schema."""
    body = request_body(STORY, Api.OPENAI_COMPATIBLE, OPTIONS)
    assert check_mistral_chat(body) != []


def collect(stub: StubServer, prompt: Prompt, options: RequestOptions) -> list[Event]:
    request = build_request(
        prompt, Api.MISTRAL, options, base_url=stub.base_url("mistral"), key=KEY
    )

    async def main() -> list[Event]:
        parser = stream_parser(Api.MISTRAL)
        return [e async for e in stream_events(request, parser, secret=KEY)]

    return asyncio.run(main())


def test_a_mistral_stream_is_read_with_its_usage(stub: StubServer) -> None:
    stub.script(Reply(tokens=["Good", "bye", "."], input_tokens=21))
    options = RequestOptions(model="stub-model", user_name="Alex", char_name="Aria")
    events = collect(stub, STORY, options)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Goodbye."
    usage = [e for e in events if isinstance(e, Usage)]
    assert usage and usage[-1].input_tokens == 21 and usage[-1].output_tokens == 3
    assert isinstance(events[-1], Finish)
    assert stub.problems == []
    sent = stub.requests[-1].body
    assert sent["safe_prompt"] is False and "seed" not in sent


def test_a_prefix_continuation_is_accepted_and_tool_calls_come_back(stub: StubServer) -> None:
    prompt = Prompt(
        kind="chat", messages=(m(Role.USER, "Tell a story"), m(Role.ASSISTANT, "Once upon a"))
    )
    stub.script(Reply(tokens=[" time"]))
    events = collect(stub, prompt, RequestOptions(model="stub-model", mistral_prefix=True))
    assert [e.text for e in events if isinstance(e, TextDelta)] == [" time"]
    tool = ToolSpec("roll", "Roll a die", {"type": "object", "properties": {}})
    stub.script(Reply(tool_calls=[("roll", {"sides": 20})]))
    options = RequestOptions(model="stub-model", tools=(tool,), tool_choice="required")
    events = collect(stub, STORY, options)
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("roll", {"sides": 20})]
    assert stub.problems == []


def test_the_stub_refuses_what_mistral_refuses() -> None:
    assert check_mistral_chat(
        {"model": "m", "messages": [{"role": "user", "content": "hi", "name": "Alex"}]}
    )
    ends_with_reply = {"model": "m", "messages": [{"role": "assistant", "content": "x"}]}
    assert any("Expected last role" in p for p in check_mistral_chat(ends_with_reply))
    assert check_mistral_chat(
        {"model": "m", "messages": [{"role": "user", "content": "x"}], "seed": 1}
    )


def test_taverna_prompt_prints_the_mistral_body(oracle_cases: Path) -> None:
    case = oracle_cases / "03_world_info_features"
    card = json.loads((case / "case.json").read_text())["characters"][0]["file"]
    args = ["prompt", "--settings", str(case / "settings.json"), "--card", str(case / card)]
    args += ["--chat", str(case / "chat.jsonl"), "--api", "mistral", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    assert body["safe_prompt"] is False
    assert all("name" not in msg for msg in body["messages"])
    assert check_mistral_chat(body) == []
