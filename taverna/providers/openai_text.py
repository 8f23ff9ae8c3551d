"""OpenAI-style text completions (`/v1/completions`): request body and stream reader."""

from __future__ import annotations

from typing import Any

from taverna.model.prompt import Prompt
from taverna.providers import openai_chat
from taverna.providers.events import Event, FinishReason, TextDelta
from taverna.providers.openai_chat import OpenAIStream, stop_strings
from taverna.providers.request import RequestOptions, bearer_headers, endpoint_url
from taverna.providers.sampling import Sampling

DEFAULT_URL = "https://api.openai.com/v1"

_FINISH = {"stop": FinishReason.STOP, "length": FinishReason.LENGTH}


def build_body(prompt: Prompt, options: RequestOptions) -> dict[str, Any]:
    """The JSON body POSTed to `/completions`."""
    sampling = Sampling.from_preset(prompt.sampling)
    body: dict[str, Any] = {"model": options.model, "prompt": prompt.text}
    if sampling.max_tokens is not None:
        body["max_tokens"] = sampling.max_tokens
    for key in ("temperature", "top_p", "presence_penalty", "frequency_penalty"):
        value = getattr(sampling, key)
        if value is not None:
            body[key] = value
    # local servers behind this API (vLLM, llama.cpp, TabbyAPI) take these too;
    # sent only when moved off their neutral value
    body.update(sampling.moved(("top_k", "min_p", "repetition_penalty")))
    body["stream"] = options.stream
    stops = stop_strings(prompt.stop, options)
    if stops:
        body["stop"] = stops
    if sampling.seed is not None and sampling.seed >= 0:
        body["seed"] = sampling.seed
    return body


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
