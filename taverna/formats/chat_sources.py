"""SillyTavern's Chat Completion sources and the setting each keeps its model in.

A Chat Completion preset (and `oai_settings` in `settings.json`) holds one model per
source: `openai_model`, `claude_model`, `google_model`, ... The model a request carries
is the one of the source it goes to, whatever source the preset was last used with;
a missing key means SillyTavern's default for that source (1.12.6 values).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# source -> the preset key of its model
MODEL_KEYS: Mapping[str, str] = {
    "openai": "openai_model",
    "claude": "claude_model",
    "makersuite": "google_model",
    "openrouter": "openrouter_model",
    "ai21": "ai21_model",
    "mistralai": "mistralai_model",
    "custom": "custom_model",
    "cohere": "cohere_model",
    "perplexity": "perplexity_model",
    "groq": "groq_model",
    "01ai": "zerooneai_model",
    "blockentropy": "blockentropy_model",
    "windowai": "windowai_model",
}

# SillyTavern 1.12.6's models for a preset that names none
DEFAULT_MODELS: Mapping[str, str] = {
    "openai": "gpt-4-turbo",
    "claude": "claude-3-5-sonnet-20240620",
    "makersuite": "gemini-1.5-pro",
    "openrouter": "OR_Website",
    "ai21": "jamba-1.5-large",
    "mistralai": "mistral-large-latest",
    "custom": "",
    "cohere": "command-r-plus",
    "perplexity": "llama-3.1-70b-instruct",
    "groq": "llama-3.1-70b-versatile",
    "01ai": "yi-large",
    "blockentropy": "be-70b-base-llama3.1",
    "windowai": "",
}

# OpenRouter's "let the website choose": SillyTavern sends no model for it.
OPENROUTER_WEBSITE_MODEL = "OR_Website"


def models_of(preset: Mapping[str, Any]) -> dict[str, str]:
    """Every source's model in a preset (its own setting, else SillyTavern's default)."""
    models = {}
    for source, key in MODEL_KEYS.items():
        value = preset.get(key)
        model = value if isinstance(value, str) else DEFAULT_MODELS[source]
        if source == "openrouter" and model == OPENROUTER_WEBSITE_MODEL:
            model = ""
        models[source] = model
    return models


def model_of(preset: Mapping[str, Any], source: str | None = None) -> str:
    """The model a preset sends to `source` (default: the preset's own source)."""
    chosen = source or str(preset.get("chat_completion_source") or "openai")
    return models_of(preset).get(chosen, "")
