"""One record per model API: how its request is built, how its answer is read, what it can do."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from taverna.model.prompt import Prompt
from taverna.providers import (
    anthropic,
    google,
    koboldcpp,
    llamacpp,
    mistral,
    ollama,
    openai_chat,
    openai_text,
)
from taverna.providers.request import Api, HttpRequest, RequestOptions
from taverna.providers.wire import StreamParser


def _nothing_preset(preset: Mapping[str, Any]) -> dict[str, Any]:
    return {}


@dataclass(frozen=True, slots=True)
class Provider:
    """What taverna knows about one API; callers ask it instead of comparing API names.

    `endpoint(base_url, options)` is the URL a body is POSTed to. `continues_in_place`:
    a continue extends the trailing assistant message (prefill) instead of being answered
    with a new message, so it needs no nudge. `in_place_option`: the connection option
    that turns that on where it is off by default. `preset_options(preset)`: the
    `RequestOptions` fields a SillyTavern Chat Completion preset sets for this API (the
    connection's own choices win over them). Whether the API takes one prompt text
    or a message list is `api.is_text_completion`.
    """

    api: Api
    build_body: Callable[[Prompt, RequestOptions], dict[str, Any]]
    endpoint: Callable[[str, RequestOptions], str]
    auth_headers: Callable[[str], dict[str, str]]
    stream_parser: Callable[[], StreamParser]
    models_request: Callable[[str, str], HttpRequest]
    parse_models: Callable[[Mapping[str, Any]], list[str]] = openai_chat.parse_models
    preset_options: Callable[[Mapping[str, Any]], dict[str, Any]] = _nothing_preset
    continues_in_place: bool = False
    in_place_option: str = ""

    def opted_in_place(self, options: Mapping[str, Any]) -> bool:
        """Whether a connection's options turn continuing in place on."""
        return bool(self.in_place_option) and bool(options.get(self.in_place_option))

    def continues_in_place_with(self, options: Mapping[str, Any]) -> bool:
        """Whether a continue extends the last message, given a connection's options."""
        return self.continues_in_place or self.opted_in_place(options)

    def model_names(self, listing: Any) -> list[str]:
        """Model names from the answer to `models_request`; an unexpected shape gives none."""
        return self.parse_models(listing) if isinstance(listing, dict) else []


class ApiModule(Protocol):
    """What every provider module of one API defines (`openai_chat` serves two)."""

    def build_body(self, prompt: Prompt, options: RequestOptions) -> dict[str, Any]: ...
    def endpoint(self, base_url: str, options: RequestOptions) -> str: ...
    def auth_headers(self, key: str) -> dict[str, str]: ...
    def models_request(self, base_url: str, key: str) -> HttpRequest: ...


def _record(
    api: Api, module: ApiModule, stream_parser: Callable[[], StreamParser], **facts: Any
) -> Provider:
    return Provider(
        api,
        module.build_body,
        module.endpoint,
        module.auth_headers,
        stream_parser,
        module.models_request,
        **facts,
    )


def _openai_chat(api: Api, **facts: Any) -> Provider:
    # OpenAI and the OpenAI-compatible endpoints share one builder that tells them apart
    return Provider(
        api,
        lambda prompt, options: openai_chat.build_body(prompt, api, options),
        openai_chat.endpoint,
        openai_chat.auth_headers,
        openai_chat.ChatStream,
        openai_chat.models_request,
        **facts,
    )


PROVIDERS: Mapping[Api, Provider] = {
    p.api: p
    for p in (
        _openai_chat(Api.OPENAI),
        # an OpenAI-compatible endpoint continues in place where the connection turns
        # `prefix` on (DeepSeek's prefix completion; sources.py sets it for DeepSeek)
        _openai_chat(
            Api.OPENAI_COMPATIBLE,
            preset_options=openai_chat.compatible_preset_options,
            in_place_option="prefix",
        ),
        # Mistral streams OpenAI's chunks; it continues in place only where the connection
        # turns `prefix` on (algo-providers.md §10, SillyTavern's `mistral.enablePrefix`)
        _record(Api.MISTRAL, mistral, openai_chat.ChatStream, in_place_option="prefix"),
        _record(
            Api.ANTHROPIC,
            anthropic,
            anthropic.MessagesStream,
            continues_in_place=True,
            preset_options=anthropic.preset_options,
        ),
        _record(
            Api.GOOGLE,
            google,
            google.GenerateContentStream,
            parse_models=google.parse_models,
            preset_options=google.preset_options,
        ),
        # Text Completion APIs continue any text in place
        _record(
            Api.KOBOLDCPP,
            koboldcpp,
            koboldcpp.GenerateStream,
            parse_models=koboldcpp.parse_models,
            continues_in_place=True,
        ),
        _record(Api.LLAMACPP, llamacpp, llamacpp.CompletionStream, continues_in_place=True),
        _record(Api.LOCAL, llamacpp, llamacpp.CompletionStream, continues_in_place=True),
        _record(
            Api.OLLAMA,
            ollama,
            ollama.GenerateStream,
            parse_models=ollama.parse_models,
            continues_in_place=True,
        ),
        _record(
            Api.OPENAI_TEXT, openai_text, openai_text.CompletionsStream, continues_in_place=True
        ),
    )
}


def provider(api: Api) -> Provider:
    """The record of `api`."""
    return PROVIDERS[api]
