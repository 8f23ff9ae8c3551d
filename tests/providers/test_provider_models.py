"""Each API gets the model of its own setting: a preset keeps one per SillyTavern source
(`openai_model`, `claude_model`, `google_model`, `mistralai_model`, `custom_model`, ...)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import taverna.cli.prompt  # noqa: F401 - registers the command
from taverna.cli.main import app
from taverna.formats.chat_sources import DEFAULT_MODELS, model_of
from taverna.formats.st_settings import chosen_chat_completion, read_settings
from taverna.providers.request import Api
from taverna.services.turns.inputs import for_api

MODELS = {
    "openai_model": "gpt-4o-mini",
    "claude_model": "claude-3-haiku-20240307",
    "google_model": "gemini-1.5-flash",
    "mistralai_model": "mistral-small-latest",
    "custom_model": "my-local-model",
    "openrouter_model": "meta-llama/llama-3-70b",
}


def settings(source: str, **models: str) -> dict[str, object]:
    return {"main_api": "openai", "oai_settings": {"chat_completion_source": source, **models}}


def write_inputs(folder: Path, doc: dict[str, object]) -> list[str]:
    (folder / "settings.json").write_text(json.dumps(doc), encoding="utf-8")
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Mira"}}
    (folder / "Mira.json").write_text(json.dumps(card), encoding="utf-8")
    chat = [
        {"user_name": "Ann", "character_name": "Mira", "create_date": "x", "chat_metadata": {}},
        {"name": "Ann", "is_user": True, "mes": "Hello."},
    ]
    (folder / "chat.jsonl").write_text("\n".join(map(json.dumps, chat)), encoding="utf-8")
    return [
        "prompt",
        "--settings",
        str(folder / "settings.json"),
        "--card",
        str(folder / "Mira.json"),
        "--chat",
        str(folder / "chat.jsonl"),
        "--json",
    ]


@pytest.mark.parametrize("saved_with", ["openai", "claude", "makersuite", "custom"])
@pytest.mark.parametrize(
    ("api", "key"),
    [
        ("openai", "openai_model"),
        ("anthropic", "claude_model"),
        ("mistral", "mistralai_model"),
        ("openai-compatible", "custom_model"),
    ],
)
def test_taverna_prompt_sends_the_model_of_the_api_asked_for(
    tmp_path: Path, saved_with: str, api: str, key: str
) -> None:
    args = write_inputs(tmp_path, settings(saved_with, **MODELS))
    result = CliRunner().invoke(app, [*args, "--api", api])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["model"] == MODELS[key]


@pytest.mark.parametrize(
    ("api", "model"),
    [
        (Api.OPENAI, "gpt-4-turbo"),
        (Api.ANTHROPIC, "claude-3-5-sonnet-20240620"),
        (Api.GOOGLE, "gemini-1.5-pro"),
        (Api.MISTRAL, "mistral-large-latest"),
        (Api.OPENAI_COMPATIBLE, ""),
    ],
)
def test_a_missing_model_setting_is_sillytaverns_default(api: Api, model: str) -> None:
    read = read_settings(json.dumps(settings("openai")))
    assert for_api(read, api).chat_completion.model == model


def test_google_and_the_tokenizer_follow_the_api_too() -> None:
    read = read_settings(json.dumps(settings("openai", **MODELS)))
    cc = for_api(read, Api.GOOGLE).chat_completion
    assert (cc.source, cc.model) == ("makersuite", "gemini-1.5-flash")
    # the preset's own source stays when its API is the one asked for
    assert for_api(read, Api.OPENAI) is read


def test_an_openai_compatible_source_keeps_its_own_model() -> None:
    # OpenRouter is served by the OpenAI-compatible API: its model, not `custom_model`
    read = read_settings(json.dumps(settings("openrouter", **MODELS)))
    cc = for_api(read, Api.OPENAI_COMPATIBLE).chat_completion
    assert (cc.source, cc.model) == ("openrouter", "meta-llama/llama-3-70b")
    # OpenRouter's "website chooses" model is sent as none, as SillyTavern does
    website = read_settings(json.dumps(settings("openrouter")))
    assert website.chat_completion.model == ""


def test_a_chat_completion_preset_reads_every_source_model() -> None:
    preset = chosen_chat_completion({"chat_completion_source": "claude", **MODELS})
    assert preset.model == MODELS["claude_model"]
    assert preset.for_source("makersuite").model == MODELS["google_model"]
    assert model_of({"chat_completion_source": "makersuite"}) == DEFAULT_MODELS["makersuite"]


def test_text_completion_apis_leave_the_preset_alone() -> None:
    read = read_settings(json.dumps(settings("claude", **MODELS)))
    text = for_api(read, Api.LLAMACPP)
    assert text.chat_completion is read.chat_completion
    # The regex scripts in force are the Text Completion preset's own.
    assert text.preset_regex_scripts == read.text_preset_regex_scripts
