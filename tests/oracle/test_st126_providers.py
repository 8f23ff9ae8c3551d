"""Every provider's request body as SillyTavern 1.12.6 sent it, replayed through taverna.

Each case under `st126/providers/` (written by `make_provider_cases.py`, recorded with
`capture_providers.py` against a stub at a fixed URL) is one Text Completion type or one
Chat Completion source pointed at the stub, with the same card and chat. The replay builds
the prompt from the case's files as `taverna prompt` does, then the body with the API and
options a connection made from taverna's matching source uses, and compares the whole
body (every field name and value), the fields both send, and the path the request goes to.
A case taverna does not agree with is listed, per test, with its reason in
`st126/known_differences_providers.json` and runs as a strict xfail.

The types and sources 1.12.6 sends only to the provider's own address
(`make_provider_cases.NOT_LOCAL`) cannot be recorded here; for them taverna's body is
checked against the provider's documented wire format instead (`DOCUMENTED`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from taverna.cli.prompt import GenerationKind, build_prompt
from taverna.cli.prompt import request_body as prompt_request_body
from taverna.model.prompt import Prompt
from taverna.providers import sources
from taverna.providers.builders import request_body
from taverna.providers.registry import provider
from taverna.providers.request import Api, RequestOptions
from tests.oracle.st126.make_provider_cases import NOT_LOCAL, STUB

ROOT = Path(__file__).parent / "st126"
CASES = ROOT / "providers"
KNOWN_FILE = ROOT / "known_differences_providers.json"
KNOWN: dict[str, dict[str, str]] = json.loads(KNOWN_FILE.read_text())

# SillyTavern's Chat Completion source -> the API `taverna prompt --api` names for it
CHAT_APIS = {
    "openai": "openai",
    "claude": "anthropic",
    "mistralai": "mistral",
    "makersuite": "google",
    "custom": "openai-compatible",
}


def _params(known: dict[str, str]) -> list[Any]:
    names = sorted(p.name for p in CASES.iterdir() if (p / "expected.json").exists())
    return [
        pytest.param(
            name,
            marks=[pytest.mark.xfail(strict=True, reason=known[name])] if name in known else [],
            id=name,
        )
        for name in names
    ]


def _text_options(settings_file: Path, source: sources.Source) -> RequestOptions:
    """The options of a connection made from a Text Completion source with 1.12.6's
    settings: the type's model and the streaming switch."""
    raw = json.loads(settings_file.read_text())["textgenerationwebui_settings"]
    return RequestOptions(
        model=str(raw.get(f"{raw['type']}_model", "") or ""),
        stream=bool(raw.get("streaming", False)),
        stop_limit=source.stop_limit,
    )


def taverna_body(case_dir: Path) -> dict[str, Any]:
    """The body taverna sends for the case's connection."""
    case = json.loads((case_dir / "case.json").read_text())
    settings_file = case_dir / "settings.json"
    cards = [case_dir / c["file"] for c in case["characters"]]
    chat = case_dir / case["chat"]["file"]
    if case["api"] == "cc":
        api = CHAT_APIS[case["provider"]]
        prompt, settings, characters, members = build_prompt(
            settings_file, cards, chat, [], api, GenerationKind.NORMAL
        )
        return prompt_request_body(prompt, api, settings, characters, members)
    source = sources.from_sillytavern(textgen_type=case["provider"])
    assert source is not None, case["provider"]
    prompt, _settings, _characters, _members = build_prompt(
        settings_file, cards, chat, [], source.api.value, GenerationKind.NORMAL
    )
    return request_body(prompt, source.api, _text_options(settings_file, source))


def _recorded(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((CASES / name / "expected.json").read_text())
    # the harness's stub, which text types that forward the whole body name in it
    if "api_server" in body:
        assert body["api_server"].rstrip("/") == STUB
    return body


@pytest.mark.parametrize("name", _params(KNOWN["body"]))
def test_provider_body(name: str) -> None:
    """The whole body: the same fields, each with the same value."""
    assert taverna_body(CASES / name) == _recorded(name)


@pytest.mark.parametrize("name", _params(KNOWN["shared"]))
def test_provider_shared_fields(name: str) -> None:
    """Every field taverna sends that 1.12.6 sent too carries 1.12.6's value."""
    expected = _recorded(name)
    got = taverna_body(CASES / name)
    shared = sorted(set(got) & set(expected))
    assert "prompt" in shared or "messages" in shared or "contents" in shared
    assert {k: got[k] for k in shared} == {k: expected[k] for k in shared}


def _source(case: dict[str, Any]) -> sources.Source:
    if case["api"] == "tc":
        found = sources.from_sillytavern(textgen_type=case["provider"])
    else:
        found = sources.find(case["provider"])
    assert found is not None, case["provider"]
    return found


@pytest.mark.parametrize("name", _params(KNOWN["endpoint"]))
def test_provider_endpoint(name: str) -> None:
    """A connection made from taverna's source, its URL the stub in the shape of the
    source's own address (its path kept; `/v1` where the person gives it, as the form
    says), posts to the path 1.12.6 posted to."""
    case = json.loads((CASES / name / "case.json").read_text())
    meta = json.loads((CASES / name / "meta.json").read_text())
    source = _source(case)
    base = STUB + (urlsplit(source.default_url).path if source.default_url else "/v1")
    expected = json.loads((CASES / name / "expected.json").read_text())
    path = meta["stub_paths"][0]
    stream = expected.get("stream") is True or path.endswith(":streamGenerateContent")
    # Gemini names the model in the path, not the body
    model = str(expected.get("model", "")) or path.split("/")[-1].split(":")[0]
    url = provider(source.api).endpoint(base, RequestOptions(model=model, stream=stream))
    assert urlsplit(url).path == path


# The documented request formats of the providers 1.12.6 cannot send to a stub.
# OpenAI's completions and chat completions parameters, which every one of them documents
# as the format it takes (TogetherAI, InfermaticAI, DreamGen, Featherless, Mancer and
# OpenRouter's completions; OpenRouter, Groq, Perplexity, Cohere's compatibility API, AI21
# and 01.AI's chat completions), plus the samplers their pages list beside them.
_OPENAI_TEXT_FIELDS = {
    "model",
    "prompt",
    "max_tokens",
    "temperature",
    "top_p",
    "n",
    "stream",
    "stop",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "seed",
    "top_k",
    "min_p",
    "repetition_penalty",
}
_OPENAI_CHAT_FIELDS = (_OPENAI_TEXT_FIELDS - {"prompt"}) | {
    "messages",
    "stream_options",
    "tools",
    "tool_choice",
    "response_format",
}
_ROLES = {"system", "user", "assistant"}


def _documented_prompt(text: bool) -> Prompt:
    """The prompt of the recorded cases (same card and chat) in the family's form."""
    case_dir = CASES / ("tc_vllm" if text else "cc_custom")
    case = json.loads((case_dir / "case.json").read_text())
    api = "openai-text" if text else "openai-compatible"
    prompt, *_ = build_prompt(
        case_dir / "settings.json",
        [case_dir / c["file"] for c in case["characters"]],
        case_dir / case["chat"]["file"],
        [],
        api,
        GenerationKind.NORMAL,
    )
    return prompt


@pytest.mark.parametrize("name", sorted(NOT_LOCAL))
def test_documented_format(name: str) -> None:
    """A source 1.12.6 sends only to its provider's own address (NOT_LOCAL says why): its
    body is the documented OpenAI-style one, whole."""
    source = sources.usable(name)
    text = source.api is Api.OPENAI_TEXT
    assert text or source.api is Api.OPENAI_COMPATIBLE, (name, source.api)
    prompt = _documented_prompt(text)
    options = RequestOptions(model="provider/model-1", stream=True, stop_limit=source.stop_limit)
    body = request_body(prompt, source.api, options)
    assert set(body) <= (_OPENAI_TEXT_FIELDS if text else _OPENAI_CHAT_FIELDS), sorted(body)
    assert body["model"] == "provider/model-1"
    assert body["stream"] is True
    if text:
        assert body["prompt"] == prompt.text
    else:
        assert body["messages"] and all(
            set(m) <= {"role", "content", "name"}
            and m["role"] in _ROLES
            and isinstance(m["content"], str)
            for m in body["messages"]
        )
    for field in ("max_tokens", "n", "seed", "top_k"):
        assert field not in body or type(body[field]) is int, field
    stop = body.get("stop", [])
    assert isinstance(stop, list) and all(isinstance(s, str) for s in stop)
    if source.stop_limit is not None:
        assert len(stop) <= source.stop_limit
