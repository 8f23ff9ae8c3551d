"""OpenAI-style text completions (`/v1/completions`): request body and stream reader."""

from __future__ import annotations

from typing import Any

from taverna.model.prompt import Prompt
from taverna.providers import openai_chat, text_body
from taverna.providers.events import Event, FinishReason, TextDelta
from taverna.providers.openai_chat import OpenAIStream, stop_strings
from taverna.providers.request import RequestOptions, bearer_headers, endpoint_url

DEFAULT_URL = "https://api.openai.com/v1"

_FINISH = {"stop": FinishReason.STOP, "length": FinishReason.LENGTH}


def _local_samplers(draft: text_body.Draft) -> dict[str, Any]:
    # local servers behind this API (vLLM, llama.cpp, TabbyAPI) take these too;
    # sent only when moved off their neutral value
    return draft.sampling.moved(("top_k", "min_p", "repetition_penalty"))


def _stop(draft: text_body.Draft) -> dict[str, Any]:
    # as many as the source takes, and no field at all when there are none
    stops = stop_strings(draft.prompt.stop, draft.options)
    return {"stop": stops} if stops else {}


BODY = text_body.TextBody(
    layout=(
        text_body.model,
        text_body.prompt_text,
        text_body.max_tokens,
        text_body.samplers,
        _local_samplers,
        text_body.stream,
        _stop,
        text_body.seed,
    ),
    samplers=tuple(
        (name, name) for name in ("temperature", "top_p", "presence_penalty", "frequency_penalty")
    ),
)


def build_body(prompt: Prompt, options: RequestOptions) -> dict[str, Any]:
    """The JSON body POSTed to `/completions`."""
    return BODY.build(prompt, options)


def endpoint(base_url: str, options: RequestOptions) -> str:
    return endpoint_url(base_url, DEFAULT_URL, "/completions")


auth_headers = bearer_headers
models_request = openai_chat.models_request  # OpenAI lists its models in one place


class CompletionsStream(OpenAIStream):
    """Reads `text_completion` chunks: `choices[0].text`, then `[DONE]`."""

    finish_reasons = _FINISH

    def _read_choice(self, choice: dict[str, Any]) -> list[Event]:
        text = choice.get("text")
        return [TextDelta(text)] if isinstance(text, str) and text else []
