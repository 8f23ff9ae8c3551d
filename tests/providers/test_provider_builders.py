"""Request bodies per API, checked against SillyTavern's recorded bodies where there are some."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taverna.errors import FormatError, ProviderError
from taverna.model.prompt import Prompt, PromptMessage, Role
from taverna.providers.builders import build_request, render_request_body
from taverna.providers.request import Api, RequestOptions, ToolSpec
from taverna.providers.sampling import Sampling
from tests.stubs import schemas


def prompt_from_frontend(request: dict[str, Any], prefill: str = "") -> Prompt:
    """The provider-neutral prompt SillyTavern's page had built (its request to its own server)."""
    messages = tuple(
        PromptMessage(Role(m["role"]), m["content"], m.get("name")) for m in request["messages"]
    )
    sampling = {
        "temp_openai": request["temperature"],
        "top_p_openai": request["top_p"],
        "freq_pen_openai": request["frequency_penalty"],
        "pres_pen_openai": request["presence_penalty"],
        "openai_max_tokens": request["max_tokens"],
    }
    if "top_k" in request:
        sampling["top_k_openai"] = request["top_k"]
    return Prompt(
        kind="chat",
        messages=messages,
        stop=tuple(request.get("stop") or ()),
        prefill=prefill,
        sampling=sampling,
    )


def load(case: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    front = json.loads((case / "frontend_request.json").read_text())
    expected = json.loads((case / "expected.json").read_text())
    return front, expected


def test_anthropic_body_is_what_sillytavern_sent(oracle_cases: Path) -> None:
    front, expected = load(oracle_cases / "16_claude")
    prompt = prompt_from_frontend(front, prefill=front["assistant_prefill"])
    body = render_request_body(
        prompt, "anthropic", model=front["model"], user_name="User", char_name="Aria"
    )
    assert body == expected
    assert list(body) == list(expected)  # same key order too
    assert schemas.check_anthropic(body) == []


@pytest.mark.parametrize("case", ["01_seraphina_basic", "04_depth_injections", "10_continue"])
def test_openai_body_is_what_sillytavern_sent(oracle_cases: Path, case: str) -> None:
    front, expected = load(oracle_cases / case)
    body = render_request_body(prompt_from_frontend(front), "openai", model=front["model"])
    # taverna also asks for the token usage at the end of the stream
    assert body.pop("stream_options") == {"include_usage": True}
    assert body == expected
    assert schemas.check_openai_chat(body, compatible=False) == []


def chat(*messages: PromptMessage, **kw: Any) -> Prompt:
    return Prompt(kind="chat", messages=messages, **kw)


S, U, A = Role.SYSTEM, Role.USER, Role.ASSISTANT


def test_anthropic_lifts_the_leading_system_run_and_starts_with_user() -> None:
    prompt = chat(
        PromptMessage(S, "Main"),
        PromptMessage(S, "Why?", "example_user"),
        PromptMessage(S, "User: Hi", "example_user"),
        PromptMessage(A, "Greeting"),
        PromptMessage(U, "Hello"),
        PromptMessage(S, "[note]"),
        stop=("\nUser:",),
        prefill="*She smiles.*  ",
    )
    options = RequestOptions(model="claude-3-5-sonnet", use_system_prompt=True, char_name="Aria")
    body = render_request_body(
        prompt, "anthropic", model="claude-3-5-sonnet", use_system_prompt=True, char_name="Aria"
    )
    assert body["system"] == "Main\n\nUser: Why?\n\nUser: Hi"
    assert body["messages"] == [
        {"role": "user", "content": options.human_sysprompt_message},
        {"role": "assistant", "content": "Greeting"},
        {"role": "user", "content": "Hello\n\n[note]"},
        {"role": "assistant", "content": "*She smiles.*"},
    ]
    assert body["stop_sequences"] == ["\nUser:"]
    assert body["max_tokens"] > 0
    assert schemas.check_anthropic(body) == []


def test_anthropic_with_tools_ends_on_a_user_turn_and_declares_tools() -> None:
    tool = ToolSpec(
        "roll", "Roll dice", {"type": "object", "properties": {"n": {"type": "integer"}}}
    )
    prompt = chat(PromptMessage(U, "Roll"), prefill="Sure")
    request = build_request(
        prompt, Api.ANTHROPIC, RequestOptions(model="claude-3", tools=(tool,)), key="k"
    )
    body = request.body
    assert body["messages"][-1] == {"role": "user", "content": "."}
    assert body["tools"][0]["input_schema"]["properties"]["n"] == {"type": "integer"}
    assert body["tool_choice"] == {"type": "auto"}
    assert request.headers == {"anthropic-version": "2023-06-01", "x-api-key": "k"}
    assert schemas.check_anthropic(dict(body)) == []


def test_anthropic_tool_round_becomes_tool_use_and_tool_result_blocks() -> None:
    call = {"id": "toolu_1", "name": "roll", "arguments": '{"n": 2}'}
    prompt = chat(
        PromptMessage(U, "Roll"),
        PromptMessage(A, "", tool_calls=(call,)),
        PromptMessage(Role.TOOL, "7", tool_call_id="toolu_1"),
    )
    tool = ToolSpec("roll", "Roll dice")
    body = build_request(prompt, Api.ANTHROPIC, RequestOptions(model="c", tools=(tool,))).body
    assert body["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "roll", "input": {"n": 2}}],
    }
    assert body["messages"][2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "7"}],
    }
    assert schemas.check_anthropic(dict(body)) == []


def test_gemini_body_roles_system_instruction_and_safety_off() -> None:
    prompt = chat(
        PromptMessage(S, "Main"),
        PromptMessage(S, "Hi", "example_user"),
        PromptMessage(A, "Greeting"),
        PromptMessage(S, "[note]"),
        PromptMessage(U, "Hello"),
        sampling={
            "temp_openai": 0.9,
            "top_k_openai": 0,
            "openai_max_tokens": 200,
            "top_p_openai": 1,
        },
        stop=("\nUser:",),
    )
    body = render_request_body(prompt, "google", model="gemini-2.0-flash", user_name="Alex")
    assert body["system_instruction"] == {"parts": {"text": "Main\n\nAlex: Hi"}}
    assert body["contents"] == [
        {"role": "model", "parts": [{"text": "Greeting"}]},
        {"role": "user", "parts": [{"text": "[note]\n\nHello"}]},
    ]
    assert {s["threshold"] for s in body["safetySettings"]} == {"BLOCK_NONE"}
    assert body["generationConfig"] == {
        "stopSequences": ["\nAlex:", "\nUser:"],
        "candidateCount": 1,
        "maxOutputTokens": 200,
        "temperature": 0.9,
        "topP": 1.0,
    }  # topK 0 is left out
    assert schemas.check_gemini(body) == []
    request = build_request(prompt, Api.GOOGLE, RequestOptions(model="gemini-2.0-flash"), key="g")
    assert request.url.endswith("/models/gemini-2.0-flash:streamGenerateContent?alt=sse")
    assert "g" not in request.url.split("?")[1]
    assert request.headers == {"x-goog-api-key": "g"}


def test_gemini_without_system_instruction_sends_system_as_user() -> None:
    prompt = chat(PromptMessage(S, "Main"), PromptMessage(U, "Hi"))
    body = render_request_body(prompt, "google", model="gemini-1.0-pro")
    assert "system_instruction" not in body
    assert body["contents"] == [{"role": "user", "parts": [{"text": "Main\n\nHi"}]}]


TEXT = Prompt(
    kind="text",
    text="<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    stop=("\nUser:", "<|im_end|>", "a", "b", "c"),
    sampling={
        "temp": 0.5,
        "top_p": 0.9,
        "top_k": 40,
        "min_p": 0.05,
        "rep_pen": 1.1,
        "rep_pen_range": 64,
        "genamt": 350,
        "max_length": 8192,
        "typical_p": 1,
        "tfs": 1,
        "dry_sequence_breakers": '["\\n", ":"]',
        "sampler_order": [6, 0, 1],
        "seed": -1,
        "mirostat_mode": 0,
        "banned_tokens": "",
    },
)


def test_llamacpp_completion_body_uses_its_own_sampler_names() -> None:
    body = render_request_body(TEXT, "llamacpp")
    assert body["prompt"] == TEXT.text
    assert body["n_predict"] == 350
    assert body["repeat_penalty"] == 1.1 and body["repeat_last_n"] == 64
    assert body["stop"] == list(TEXT.stop)
    assert body["dry_sequence_breakers"] == ["\n", ":"]
    assert "max_length" not in body and "sampler_order" not in body
    assert schemas.check_llamacpp(body) == []


def test_koboldcpp_body_uses_its_own_sampler_names() -> None:
    body = render_request_body(TEXT, "koboldcpp")
    assert body["max_length"] == 350 and body["max_context_length"] == 8192
    assert body["rep_pen"] == 1.1 and body["sampler_order"] == [6, 0, 1]
    assert body["stop_sequence"] == list(TEXT.stop)
    assert "sampler_seed" not in body  # -1 means random
    assert schemas.check_koboldcpp(body) == []


def test_openai_text_body_keeps_four_stop_strings() -> None:
    body = render_request_body(TEXT, "openai-text", model="gpt-3.5-turbo-instruct")
    assert body["stop"] == list(TEXT.stop[:4])
    assert body["max_tokens"] == 350 and body["top_k"] == 40
    assert schemas.check_openai_completions(body) == []


def test_openai_leaves_out_samplers_it_does_not_have() -> None:
    prompt = chat(
        PromptMessage(U, "Hi"),
        sampling={
            "top_k_openai": 40,
            "min_p_openai": 0.1,
            "repetition_penalty_openai": 1.2,
            "seed": 5,
        },
    )
    body = render_request_body(prompt, "openai", model="gpt-4o")
    assert "top_k" not in body and "min_p" not in body and "repetition_penalty" not in body
    assert body["seed"] == 5
    compatible = render_request_body(prompt, "openai-compatible", model="m")
    assert compatible["top_k"] == 40 and compatible["min_p"] == 0.1
    assert compatible["repetition_penalty"] == 1.2


def test_openai_reasoning_models_take_max_completion_tokens_and_no_sampling() -> None:
    prompt = chat(
        PromptMessage(U, "Hi"), sampling={"temp_openai": 1, "openai_max_tokens": 50}, stop=("x",)
    )
    body = render_request_body(prompt, "openai", model="o3-mini")
    assert body["max_completion_tokens"] == 50
    assert "temperature" not in body and "max_tokens" not in body and "stop" not in body


def test_openai_stop_strings_are_cut_to_four() -> None:
    prompt = chat(PromptMessage(U, "Hi"), stop=("1", "2", "3", "4", "5"))
    assert render_request_body(prompt, "openai", model="m")["stop"] == ["1", "2", "3", "4"]


def test_a_text_prompt_for_a_chat_api_is_refused_clearly() -> None:
    with pytest.raises(ProviderError, match="takes chat messages"):
        render_request_body(TEXT, "openai")
    with pytest.raises(ProviderError, match="Text Completion API"):
        render_request_body(chat(PromptMessage(U, "Hi")), "koboldcpp")


def test_unknown_api_and_mode_names_are_errors() -> None:
    with pytest.raises(ProviderError, match="unknown API"):
        render_request_body(TEXT, "telepathy")
    with pytest.raises(ProviderError, match="unknown post-processing"):
        render_request_body(TEXT, "llamacpp", post_processing="squash")


def test_sampling_names_from_every_preset_kind_agree() -> None:
    chat_settings = Sampling.from_preset({"temp_openai": 0.7, "openai_max_tokens": 300})
    chat_file = Sampling.from_preset({"temperature": 0.7, "openai_max_tokens": 300})
    text = Sampling.from_preset({"temp": 0.7, "genamt": 300})
    assert chat_settings == chat_file == text


def test_a_sampling_value_of_the_wrong_type_names_its_field() -> None:
    with pytest.raises(FormatError, match="temp_openai"):
        Sampling.from_preset({"temp_openai": "hot"})


def test_gemini_tool_round_becomes_function_call_and_response_parts() -> None:
    call = {"id": "c1", "name": "roll", "arguments": '{"n": 2}'}
    prompt = chat(
        PromptMessage(U, "Roll"),
        PromptMessage(A, "Rolling.", tool_calls=(call,)),
        PromptMessage(Role.TOOL, '{"total": 7}', tool_call_id="c1"),
        PromptMessage(Role.TOOL, "not json", tool_call_id="c1"),
    )
    tool = ToolSpec("roll", "Roll dice")
    options = RequestOptions(model="gemini-2.0-flash", tools=(tool,), tool_choice="required")
    body = build_request(prompt, Api.GOOGLE, options).body
    assert body["contents"][1] == {
        "role": "model",
        "parts": [{"text": "Rolling."}, {"functionCall": {"name": "roll", "args": {"n": 2}}}],
    }
    assert body["contents"][2]["parts"] == [
        {"functionResponse": {"name": "roll", "response": {"total": 7}}},
        {"functionResponse": {"name": "roll", "response": {"result": "not json"}}},
    ]
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
    assert body["tools"][0]["functionDeclarations"][0]["name"] == "roll"
    assert schemas.check_gemini(dict(body)) == []


def test_openai_tool_round_keeps_tool_calls_and_results() -> None:
    call = {"id": "c1", "name": "roll", "arguments": '{"n": 2}'}
    prompt = chat(
        PromptMessage(U, "Roll"),
        PromptMessage(A, "", tool_calls=(call,)),
        PromptMessage(Role.TOOL, "7", tool_call_id="c1", name="roll"),
    )
    body = build_request(
        prompt, Api.OPENAI, RequestOptions(model="gpt-4o", tools=(ToolSpec("roll", "Roll"),))
    ).body
    assert body["messages"][1]["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "roll", "arguments": '{"n": 2}'}}
    ]
    assert body["messages"][2] == {"role": "tool", "content": "7", "tool_call_id": "c1"}
    assert body["tool_choice"] == "auto"
    assert schemas.check_openai_chat(dict(body), compatible=False) == []


def test_gemini_stop_sequences_are_name_separator_and_three_custom_strings() -> None:
    # SillyTavern: the name line, the new-chat separator, then at most 3 custom strings
    prompt = replace(
        chat(PromptMessage(U, "Hi"), stop=("a", "b", "a", "d", "e")),
        new_chat_prompt="[Start a new Chat]",
    )
    body = render_request_body(prompt, "google", model="gemini-2.0-flash", user_name="Alex")
    assert body["generationConfig"]["stopSequences"] == [
        "\nAlex:",
        "[Start a new Chat]",
        "a",
        "b",
        "a",
    ]
    # no separator (a preset that empties it): the custom strings stay at three
    no_separator = replace(prompt, new_chat_prompt="")
    body = render_request_body(no_separator, "google", model="g", user_name="Alex")
    assert body["generationConfig"]["stopSequences"] == ["\nAlex:", "a", "b", "a"]
    impersonating = build_request(
        prompt, Api.GOOGLE, RequestOptions(model="g", char_name="Aria", impersonate=True)
    ).body
    assert impersonating["generationConfig"]["stopSequences"][0] == "\nAria:"


_roles = st.sampled_from([S, U, A])
_messages = st.lists(
    st.builds(
        PromptMessage,
        _roles,
        st.text(alphabet="ab \n", min_size=1, max_size=5),
        st.sampled_from([None, "example_user", "example_assistant"]),
    ),
    min_size=1,
    max_size=10,
)


@given(_messages, st.booleans(), st.text(alphabet="xy ", max_size=3))
def test_anthropic_messages_always_alternate(
    messages: list[PromptMessage], system: bool, prefill: str
) -> None:
    prompt = chat(*messages, prefill=prefill)
    body = render_request_body(
        prompt, "anthropic", model="claude-3-haiku", use_system_prompt=system
    )
    roles = [m["role"] for m in body["messages"]]
    assert set(roles) <= {"user", "assistant"}
    assert all(a != b for a, b in itertools.pairwise(roles))
    if system:
        assert roles[0] == "user"
    if prefill.rstrip():
        assert roles[-1] == "assistant"
    assert schemas.check_anthropic(body) == []


@given(_messages)
def test_gemini_contents_always_alternate_user_and_model(messages: list[PromptMessage]) -> None:
    body = render_request_body(chat(*messages), "google", model="gemini-2.0-flash")
    roles = [c["role"] for c in body["contents"]]
    assert set(roles) <= {"user", "model"}
    assert all(a != b for a, b in itertools.pairwise(roles))
    assert schemas.check_gemini(body) == []
