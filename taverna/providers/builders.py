"""One entry point from a prompt to the HTTP request of any supported API."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from taverna.errors import ProviderError
from taverna.model.prompt import Prompt
from taverna.providers.registry import provider
from taverna.providers.request import Api, HttpRequest, PostProcessing, RequestOptions
from taverna.providers.wire import StreamParser


def request_body(prompt: Prompt, api: Api, options: RequestOptions) -> dict[str, Any]:
    """The exact JSON body the transport sends for `api` (pure)."""
    _check_kind(prompt, api)
    return provider(api).build_body(prompt, options)


def _check_kind(prompt: Prompt, api: Api) -> None:
    if api.is_text_completion and prompt.kind != "text":
        raise ProviderError(
            f"{api.value} is a Text Completion API but the prompt is a chat message list; "
            "render the prompt with an instruct template for it",
            code="is_text_completion_api_but",
            params={"value": str(api.value)},
        )
    if not api.is_text_completion and prompt.kind == "text":
        raise ProviderError(
            f"{api.value} takes chat messages but the prompt is a single text",
            code="takes_chat_messages_but_prompt",
            params={"value": str(api.value)},
        )


def build_request(
    prompt: Prompt, api: Api, options: RequestOptions, *, base_url: str = "", key: str = ""
) -> HttpRequest:
    """The full request: URL, headers (with the key) and body."""
    body = request_body(prompt, api, options)
    chosen = provider(api)
    url, headers = chosen.endpoint(base_url, options), chosen.auth_headers(key)
    return HttpRequest(url=url, body=body, headers=headers, stream=options.stream)


def stream_parser(api: Api) -> StreamParser:
    """A fresh reader of `api`'s streamed (or whole) answer."""
    return provider(api).stream_parser()


def supports_prefill(api: Api) -> bool:
    """Whether the API continues a trailing assistant message in place (prefill) whatever
    the connection's options (`Provider.continues_in_place`)."""
    return provider(api).continues_in_place


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
