"""One preset or template file read on its own gives what `read_settings` gives for it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from taverna.errors import FormatError
from taverna.formats.st_settings import (
    chosen_chat_completion,
    chosen_context_template,
    chosen_instruct_template,
    read_settings,
)

# Documents of our own, with the older keys the reader migrates.
HANDMADE_PRESETS: list[dict[str, Any]] = [
    {},
    {"assistant_prefill": "Sure:", "names_in_completion": True, "chat_completion_source": "claude"},
    {
        "prompts": [{"identifier": "main", "content": "Be {{char}}.", "role": "user"}],
        "prompt_order": [
            {"character_id": 100000, "order": []},
            {"character_id": 100001, "order": [{"identifier": "main", "enabled": False}]},
        ],
        "openai_max_context": "8000",
        "bias_presets": {"b": [{"text": "x", "value": -50}]},
        "bias_preset_selected": "b",
        "reverse_proxy": "http://proxy",
    },
]
HANDMADE_INSTRUCT: list[dict[str, Any]] = [
    {},
    {"name": "Old", "names": True, "separator_sequence": "\n"},
    {"preset": "Older", "names_force_groups": True, "enabled": False, "wrap": False},
    {"names": False, "names_force_groups": False, "input_sequence": "<|user|>"},
]
HANDMADE_CONTEXT: list[dict[str, Any]] = [
    {},
    {"name": "Mine", "story_string": "{{description}}", "use_stop_strings": False},
    {"preset": "Older", "chat_start": "", "example_separator": "---"},
]


def _via_settings(doc: dict[str, Any]) -> Any:
    return read_settings(json.dumps(doc))


def _check_preset(data: dict[str, Any]) -> None:
    expected = _via_settings({"oai_settings": data}).chat_completion
    assert chosen_chat_completion(data) == expected


def _check_instruct(data: dict[str, Any]) -> None:
    doc = {"power_user": {"instruct": {**data, "enabled": True}}}
    expected = _via_settings(doc).text_completion
    assert chosen_instruct_template(data) == expected.instruct
    assert expected.instruct_enabled


def _check_context(data: dict[str, Any]) -> None:
    expected = _via_settings({"power_user": {"context": data}}).text_completion.context
    assert chosen_context_template(data) == expected


def _files(folder: Path) -> list[Path]:
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not files:
        pytest.skip(f"no files in {folder}")
    return files


@pytest.mark.parametrize("data", HANDMADE_PRESETS)
def test_handmade_presets(data: dict[str, Any]) -> None:
    _check_preset(data)


@pytest.mark.parametrize("data", HANDMADE_INSTRUCT)
def test_handmade_instruct_templates(data: dict[str, Any]) -> None:
    _check_instruct(data)


@pytest.mark.parametrize("data", HANDMADE_CONTEXT)
def test_handmade_context_templates(data: dict[str, Any]) -> None:
    _check_context(data)


def test_sillytavern_presets(st_fixtures: Path) -> None:
    for path in _files(st_fixtures / "presets" / "openai"):
        _check_preset(json.loads(path.read_text(encoding="utf-8")))


def test_sillytavern_instruct_templates(st_fixtures: Path) -> None:
    for path in _files(st_fixtures / "presets" / "instruct"):
        _check_instruct(json.loads(path.read_text(encoding="utf-8")))


def test_sillytavern_context_templates(st_fixtures: Path) -> None:
    for path in _files(st_fixtures / "presets" / "context"):
        _check_context(json.loads(path.read_text(encoding="utf-8")))


def test_oracle_settings_parts(oracle_cases: Path) -> None:
    """Each case's `oai_settings` and chosen templates, read on their own."""
    files = sorted(oracle_cases.glob("*/settings.json"))
    if not files:
        pytest.skip("no oracle settings")
    for path in files:
        doc = json.loads(path.read_text(encoding="utf-8"))
        _check_preset(doc.get("oai_settings") or {})
        power = doc.get("power_user") or {}
        _check_instruct(power.get("instruct") or {})
        _check_context(power.get("context") or {})


@pytest.mark.parametrize(
    ("read", "data", "field"),
    [
        (chosen_chat_completion, {"prompts": {"a": 1}}, "prompts"),
        (chosen_chat_completion, {"prompts": [{"identifier": 5}]}, "prompts[0].identifier"),
        (
            chosen_chat_completion,
            {"prompt_order": [{"character_id": 100001, "order": [{"enabled": "yes"}]}]},
            "prompt_order[0].order[0].enabled",
        ),
        (chosen_chat_completion, {"openai_max_context": "lots"}, "openai_max_context"),
        (chosen_instruct_template, {"input_sequence": 3}, "input_sequence"),
        (chosen_context_template, {"use_stop_strings": "no"}, "use_stop_strings"),
    ],
)
def test_errors_name_the_field(read: Any, data: dict[str, Any], field: str) -> None:
    with pytest.raises(FormatError) as error:
        read(data, file="x.json")
    assert error.value.field == field


@pytest.mark.parametrize("read", [chosen_chat_completion, chosen_instruct_template])
def test_not_an_object(read: Any) -> None:
    with pytest.raises(FormatError):
        read(["not", "an", "object"])
