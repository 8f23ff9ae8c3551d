"""One entry point from a prompt to the HTTP request of any supported API."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from taverna.errors import ProviderError
from taverna.model.prompt import Prompt
from taverna.providers import (
    anthropic,
    google,
    koboldcpp,
    llamacpp,
    mistral,
    openai_chat,
    openai_text,
)
from taverna.providers.request import Api, HttpRequest, PostProcessing, RequestOptions
from taverna.providers.wire import StreamParser


def request_body(prompt: Prompt, api: Api, options: RequestOptions) -> dict[str, Any]:
    """The exact JSON body the transport sends for `api` (pure)."""
    _check_kind(prompt, api)
    if api in (Api.OPENAI, Api.OPENAI_COMPATIBLE):
        return openai_chat.build_body(prompt, api, options)
    if api is Api.MISTRAL:
        return mistral.build_body(prompt, options)
    if api is Api.ANTHROPIC:
        return anthropic.build_body(prompt, options)
    if api is Api.GOOGLE:
        return google.build_body(prompt, options)
    if api is Api.KOBOLDCPP:
        return koboldcpp.build_body(prompt, options)
    if api is Api.LLAMACPP:
        return llamacpp.build_body(prompt, options)
    return openai_text.build_body(prompt, options)


def _check_kind(prompt: Prompt, api: Api) -> None:
    if api.is_text_completion and prompt.kind != "text":
        raise ProviderError(
            f"{api.value} is a Text Completion API but the prompt is a chat message list; "
            "render the prompt with an instruct template for it"
        )
    if not api.is_text_completion and prompt.kind == "text":
        raise ProviderError(f"{api.value} takes chat messages but the prompt is a single text")


def build_request(
    prompt: Prompt, api: Api, options: RequestOptions, *, base_url: str = "", key: str = ""
) -> HttpRequest:
    """The full request: URL, headers (with the key) and body."""
    body = request_body(prompt, api, options)
    if api in (Api.OPENAI, Api.OPENAI_COMPATIBLE):
        url, headers = openai_chat.endpoint(base_url), openai_chat.auth_headers(key)
    elif api is Api.MISTRAL:
        url, headers = mistral.endpoint(base_url), mistral.auth_headers(key)
    elif api is Api.ANTHROPIC:
        url, headers = anthropic.endpoint(base_url), anthropic.auth_headers(key)
    elif api is Api.GOOGLE:
        url = google.endpoint(base_url, options.model, options.stream)
        headers = google.auth_headers(key)
    elif api is Api.KOBOLDCPP:
        url, headers = koboldcpp.endpoint(base_url, options.stream), koboldcpp.auth_headers(key)
    elif api is Api.LLAMACPP:
        url, headers = llamacpp.endpoint(base_url), llamacpp.auth_headers(key)
    else:
        url, headers = openai_text.endpoint(base_url), openai_text.auth_headers(key)
    return HttpRequest(url=url, body=body, headers=headers, stream=options.stream)


def stream_parser(api: Api) -> StreamParser:
    """A fresh reader of `api`'s streamed (or whole) answer."""
    if api in (Api.OPENAI, Api.OPENAI_COMPATIBLE, Api.MISTRAL):
        # Mistral streams OpenAI's chunks
        return openai_chat.ChatStream()
    if api is Api.ANTHROPIC:
        return anthropic.MessagesStream()
    if api is Api.GOOGLE:
        return google.GenerateContentStream()
    if api is Api.KOBOLDCPP:
        return koboldcpp.GenerateStream()
    if api is Api.LLAMACPP:
        return llamacpp.CompletionStream()
    return openai_text.CompletionsStream()


def supports_prefill(api: Api) -> bool:
    """Whether the API continues a trailing assistant message in place (prefill).

    Anthropic does; Text Completion APIs continue any text; OpenAI-style chat APIs
    answer a trailing assistant message with a new one, so continue needs a nudge.
    """
    return api is Api.ANTHROPIC or api.is_text_completion


def render_request_body(
    prompt: Prompt,
    api: str,
    *,
    post_processing: str = "none",
    model: str = "",
    user_name: str = "User",
    char_name: str = "",
    group_members: tuple[str, ...] = (),
    use_system_prompt: bool | None = None,
    stream: bool = True,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The body `taverna prompt --api API --post-processing MODE` prints.

    `api` is a name `Api.parse` accepts (openai, openai-compatible/custom,
    anthropic/claude, google/makersuite, mistral/mistralai, koboldcpp, llamacpp/textgen,
    openai-text).
    `extra` may carry RequestOptions fields by name (e.g. `human_sysprompt_message`).
    """
    chosen = Api.parse(api)
    options = RequestOptions(
        model=model,
        stream=stream,
        post_processing=PostProcessing.parse(post_processing),
        user_name=user_name,
        char_name=char_name,
        group_members=group_members,
        use_system_prompt=use_system_prompt,
    )
    if extra:
        options = replace(options, **dict(extra))
    return request_body(prompt, chosen, options)
