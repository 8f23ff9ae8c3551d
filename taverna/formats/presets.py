"""Preset and template files: Chat Completion presets, instruct, context and system-prompt
templates, Text Completion sampler presets (formats-presets.md)."""

from __future__ import annotations

from pathlib import PurePath
from typing import TypeVar

from taverna.errors import FormatWarning
from taverna.formats.validation import read_model
from taverna.model.presets import (
    ChatCompletionPreset,
    ContextTemplate,
    InstructTemplate,
    SystemPromptPreset,
    TextCompletionPreset,
)

T = TypeVar("T", InstructTemplate, ContextTemplate, SystemPromptPreset)


def read_chat_completion_preset(
    data: bytes, *, file: str | None = None, warnings: list[FormatWarning] | None = None
) -> ChatCompletionPreset:
    """`OpenAI Settings/<name>.json`."""
    return read_model(ChatCompletionPreset, data, file=file, warnings=warnings)


def read_instruct_template(
    data: bytes, *, file: str | None = None, warnings: list[FormatWarning] | None = None
) -> InstructTemplate:
    """`instruct/<name>.json`."""
    return read_model(InstructTemplate, data, file=file, warnings=warnings)


def read_context_template(
    data: bytes, *, file: str | None = None, warnings: list[FormatWarning] | None = None
) -> ContextTemplate:
    """`context/<name>.json`."""
    return read_model(ContextTemplate, data, file=file, warnings=warnings)


def read_system_prompt(
    data: bytes, *, file: str | None = None, warnings: list[FormatWarning] | None = None
) -> SystemPromptPreset:
    """`sysprompt/<name>.json`."""
    return read_model(SystemPromptPreset, data, file=file, warnings=warnings)


def read_text_completion_preset(
    data: bytes, *, file: str | None = None, warnings: list[FormatWarning] | None = None
) -> TextCompletionPreset:
    """`TextGen Settings/<name>.json`."""
    return read_model(TextCompletionPreset, data, file=file, warnings=warnings)


def named_on_import(template: T, file_name: str) -> T:
    """The template with `name` set as SillyTavern sets it on import: its own or the file's.

    formats-presets.md: the name is `data.name`, else the file name without `.json` and
    `.settings`.
    """
    if template.name:
        return template
    stem = PurePath(file_name).name
    for suffix in (".json", ".settings"):
        stem = stem.removesuffix(suffix)
    return type(template).from_json({**template.to_json(), "name": stem})
