"""Mistral's Chat Completions API (api.mistral.ai): its own message rules and request body.

The wire is OpenAI's (same endpoint path, same streamed chunks), but Mistral's schema
has no speaker names on messages, only a fixed set of request fields, and its own
continuation flag (`prefix`) on a last assistant message. algo-providers.md §5.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from taverna.model.prompt import Prompt
from taverna.providers.request import (
    HttpRequest,
    RequestOptions,
    bearer_headers,
    endpoint_url,
    models_listing,
)
from taverna.providers.sampling import Sampling
from taverna.providers.wire import WireMessage, example_prefixed, text_of, to_wire, with_text

DEFAULT_URL = "https://api.mistral.ai/v1"


def convert_messages(
    messages: list[WireMessage], user: str, char: str, *, prefix: bool = False
) -> list[WireMessage]:
    """The messages as Mistral takes them (a new list; the input is left alone)."""
    out = [dict(m) for m in messages]
    if prefix and out and out[-1]["role"] == "assistant":
        # algo-providers.md §5.1: the model continues this message in place
        out[-1]["prefix"] = True
    for message in out:
        name = message.pop("name", None)
        if not name:
            continue
        content = message.get("content")
        if not isinstance(content, str | list):
            continue
        text = text_of(content)
        if message["role"] == "system" and name in ("example_user", "example_assistant"):
            # §5.2: example speakers go into the text, once
            message["content"] = with_text(
                content,
                example_prefixed({"content": text, "name": name}, user, char, only_if_missing=True),
            )
        elif message["role"] != "system" and not text.startswith(f"{name}: "):
            # §5.3: Mistral has no name field; the speaker goes into the text (a picture's
            # message keeps its parts, the first text part named)
            message["content"] = with_text(content, f"{name}: {text}")
        # A name SillyTavern would leave on the message is dropped too: Mistral's
        # schema has no such field on these messages.
    # §5.4: a system message right after a reply is the user's turn for Mistral
    for before, message in pairwise(out):
        if before["role"] == "assistant" and message["role"] == "system":
            message["role"] = "user"
    return out


def build_body(prompt: Prompt, options: RequestOptions) -> dict[str, Any]:
    """The exact JSON body POSTed to Mistral's `/chat/completions`.

    Only the fields SillyTavern sends to Mistral (§5.5): samplers Mistral does not
    take are left out rather than sent and refused.
    """
    sampling = Sampling.from_preset(prompt.sampling)
    messages = convert_messages(
        to_wire(prompt.messages),
        options.user_name,
        options.char_name,
        prefix=options.mistral_prefix,
    )
    body: dict[str, Any] = {"model": options.model, "messages": messages}
    if sampling.temperature is not None:
        body["temperature"] = sampling.temperature
    if sampling.top_p is not None:
        body["top_p"] = sampling.top_p
    if sampling.max_tokens is not None:
        body["max_tokens"] = sampling.max_tokens
    body["stream"] = options.stream
    body["safe_prompt"] = False
    if sampling.seed is not None and sampling.seed >= 0:
        body["random_seed"] = sampling.seed
    if options.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": dict(t.parameters),
                },
            }
            for t in options.tools
        ]
        # Mistral's word for "must call a tool" is `any`
        body["tool_choice"] = "any" if options.tool_choice == "required" else "auto"
    return body


def endpoint(base_url: str, options: RequestOptions) -> str:
    """The URL a body is POSTed to, from a connection's base URL."""
    return endpoint_url(base_url, DEFAULT_URL, "/chat/completions")


auth_headers = bearer_headers


def models_request(base_url: str, key: str) -> HttpRequest:
    """The GET request that lists Mistral's models (answered in OpenAI's shape)."""
    return models_listing(base_url, DEFAULT_URL, auth_headers(key))
