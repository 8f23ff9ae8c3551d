"""Which APIs and models are sent pictures (SillyTavern's `isImageInliningSupported`, 1.12.6).

A picture goes with its message only when the preset turns inline images on and the
source can take it: OpenAI, Claude, Gemini, 01.AI and Mistral for models whose name
contains a known vision model's; OpenRouter unless forced to instruct; a custom
endpoint always; Text Completion never.
"""

from __future__ import annotations

VISION_MODELS = (
    "gpt-4-vision",
    "gemini-1.5-flash",
    "gemini-1.5-flash-latest",
    "gemini-1.5-flash-001",
    "gemini-1.5-flash-exp-0827",
    "gemini-1.5-flash-8b-exp-0827",
    "gemini-1.0-pro-vision-latest",
    "gemini-1.5-pro",
    "gemini-1.5-pro-latest",
    "gemini-1.5-pro-001",
    "gemini-1.5-pro-exp-0801",
    "gemini-1.5-pro-exp-0827",
    "gemini-pro-vision",
    "claude-3",
    "claude-3-5",
    "gpt-4-turbo",
    "gpt-4o",
    "gpt-4o-mini",
    "chatgpt-4o-latest",
    "yi-vision",
    "pixtral-latest",
    "pixtral-12b-2409",
)
_BY_MODEL = frozenset({"openai", "claude", "makersuite", "01ai", "mistralai"})


def sends_pictures(
    source: str | None, model: str, *, openrouter_force_instruct: bool = False
) -> bool:
    """Whether a Chat Completion request to `source` for `model` carries pictures
    (the preset's `image_inlining` being on is the caller's part)."""
    if source is None:
        return False
    if source == "custom":
        return True
    if source == "openrouter":
        return not openrouter_force_instruct
    if source not in _BY_MODEL:
        return False
    if source == "openai" and "gpt-4-turbo-preview" in model:
        return False
    return any(name in model for name in VISION_MODELS)
