"""OpenAI Chat Completions and every OpenAI-compatible endpoint: request body and stream reader."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from taverna.model.prompt import Prompt
from taverna.providers.events import (
    ErrorKind,
    Event,
    FinishReason,
    ReasoningDelta,
    StreamError,
    TextDelta,
)
from taverna.providers.postprocess import Names, post_process
from taverna.providers.request import (
    Api,
    HttpRequest,
    PostProcessing,
    RequestOptions,
    bearer_headers,
    endpoint_url,
    models_listing,
)
from taverna.providers.sampling import Sampling
from taverna.providers.wire import JsonChunkStream, to_wire

DEFAULT_URL = "https://api.openai.com/v1"

# algo-providers.md §1.6: OpenAI and compatible endpoints take at most four stop strings
MAX_STOP = 4

_FINISH = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
    "content_filter": FinishReason.CONTENT_FILTER,
}


def is_reasoning_model(model: str) -> bool:
    """OpenAI's o-series: they take `max_completion_tokens` and no sampling knobs."""
    return model.startswith(("o1", "o3", "o4"))


def build_body(prompt: Prompt, api: Api, options: RequestOptions) -> dict[str, Any]:
    """The exact JSON body POSTed to `/chat/completions`."""
    sampling = Sampling.from_preset(prompt.sampling)
    messages = to_wire(prompt.messages)
    if api is Api.OPENAI_COMPATIBLE and options.post_processing is not PostProcessing.NONE:
        names = Names(options.user_name, options.char_name, options.group_members)
        messages = post_process(
            messages, options.post_processing, names, keep_tools=bool(options.tools)
        )
    # a continue sent as prefix completion (DeepSeek's beta URL): the reply goes on from
    # the trailing assistant message
    prefixed = api is Api.OPENAI_COMPATIBLE and options.mistral_prefix
    if prefixed and messages and messages[-1].get("role") == "assistant":
        messages[-1] = {**messages[-1], "prefix": True}
    if options.source == "openrouter" and "claude" in options.model:
        openrouter_claude_cache(messages, options)
    body: dict[str, Any] = {"messages": messages, "model": options.model}
    reasoning = api is Api.OPENAI and is_reasoning_model(options.model)
    if not reasoning:
        _put(body, "temperature", sampling.temperature)
    if sampling.max_tokens is not None:
        body["max_completion_tokens" if reasoning else "max_tokens"] = sampling.max_tokens
    body["stream"] = options.stream
    if not reasoning:
        _put(body, "presence_penalty", sampling.presence_penalty)
        _put(body, "frequency_penalty", sampling.frequency_penalty)
        _put(body, "top_p", sampling.top_p)
    if api is Api.OPENAI and not reasoning:
        body["logit_bias"] = sampling.logit_bias if isinstance(sampling.logit_bias, dict) else {}
    elif isinstance(sampling.logit_bias, dict) and sampling.logit_bias:
        body["logit_bias"] = sampling.logit_bias
    if api is Api.OPENAI_COMPATIBLE:
        # samplers OpenAI itself lacks; sent only when moved off their neutral value,
        # because strict servers (Mistral's) reject fields they do not know
        body.update(sampling.moved(("top_k", "min_p", "top_a", "repetition_penalty")))
    stops = stop_strings(prompt.stop, options)
    if stops and not reasoning:
        body["stop"] = stops
    if sampling.seed is not None and sampling.seed >= 0:
        body["seed"] = sampling.seed
    if sampling.n is not None and sampling.n > 1:
        body["n"] = sampling.n
    if reasoning and sampling.reasoning_effort:
        body["reasoning_effort"] = sampling.reasoning_effort
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
        body["tool_choice"] = options.tool_choice
    if api is Api.OPENAI and options.stream:
        body["stream_options"] = {"include_usage": True}
    return body


_CACHED = {"type": "ephemeral"}


def openrouter_claude_cache(messages: list[dict[str, Any]], options: RequestOptions) -> None:
    """Claude's cache breakpoints in an OpenRouter body, as SillyTavern puts them there: the
    first system message's text, and the turns at the depth and two speakers before it
    (system messages neither counted nor marked; a trailing prefill skipped)."""
    if options.cache_system_prompt:
        first = next((m for m in messages if m.get("role") == "system"), None)
        if first is not None:
            _mark(first)
    if options.cache_at_depth < 0:
        return
    depth, previous, in_prefill = 0, "", True
    for message in reversed(messages):
        role = message.get("role")
        if (in_prefill and role == "assistant") or role == "system":
            continue
        in_prefill = False
        if role == previous:
            continue
        if depth in (options.cache_at_depth, options.cache_at_depth + 2):
            _mark(message)
        if depth == options.cache_at_depth + 2:
            return
        depth, previous = depth + 1, str(role)


def _mark(message: dict[str, Any]) -> None:
    """A breakpoint on the message's last text part (a text becomes one such part)."""
    content = message.get("content")
    if isinstance(content, str) and content:
        message["content"] = [{"type": "text", "text": content, "cache_control": dict(_CACHED)}]
    elif isinstance(content, list):
        texts = [
            i
            for i, part in enumerate(content)
            if isinstance(part, dict) and part.get("type") == "text"
        ]
        if texts:
            content[texts[-1]] = {**content[texts[-1]], "cache_control": dict(_CACHED)}


def stop_strings(stops: tuple[str, ...], options: RequestOptions) -> list[str]:
    """The custom stop strings a body carries: OpenAI's four, or the source's own limit."""
    limit = MAX_STOP if options.stop_limit == -1 else options.stop_limit
    return list(stops if limit is None else stops[:limit])


def _put(body: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        body[key] = value


def endpoint(base_url: str, options: RequestOptions) -> str:
    """The URL a body is POSTed to, from a connection's base URL."""
    return endpoint_url(base_url, DEFAULT_URL, "/chat/completions")


auth_headers = bearer_headers


def models_request(base_url: str, key: str) -> HttpRequest:
    """The GET request that lists an OpenAI-style API's models."""
    return models_listing(base_url, DEFAULT_URL, auth_headers(key))


def parse_models(body: Mapping[str, Any]) -> list[str]:
    """Model ids from an OpenAI-style listing (`data: [{id}]`), sorted."""
    return sorted(
        {str(m["id"]) for m in body.get("data") or () if isinstance(m, dict) and m.get("id")}
    )


def compatible_preset_options(preset: Mapping[str, Any]) -> dict[str, Any]:
    """The request options a SillyTavern preset sets for a custom OpenAI-compatible
    endpoint: how its messages are reshaped."""
    if "custom_prompt_post_processing" not in preset:
        return {}
    mode = str(preset.get("custom_prompt_post_processing") or "")
    return {"post_processing": PostProcessing.parse(mode)}


def cached_tokens(usage: Mapping[str, Any]) -> int | None:
    """The prompt tokens an OpenAI-style usage says were read from the API's prompt cache:
    OpenAI's `prompt_tokens_details.cached_tokens`, else DeepSeek's
    `prompt_cache_hit_tokens` (None where it says neither)."""
    details = usage.get("prompt_tokens_details")
    found = details.get("cached_tokens") if isinstance(details, dict) else None
    if not isinstance(found, int):
        found = usage.get("prompt_cache_hit_tokens")
    return found if isinstance(found, int) and not isinstance(found, bool) else None


class OpenAIStream(JsonChunkStream):
    """Reads OpenAI-style chunks (then the `[DONE]` sentinel): error, usage, the first choice."""

    done_marker = "[DONE]"
    finish_reasons: ClassVar[Mapping[str, FinishReason]] = _FINISH

    def _read_chunk(self, chunk: dict[str, Any]) -> list[Event]:
        if "error" in chunk:
            self.finished = True
            return [error_event(chunk["error"])]
        out: list[Event] = []
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._note_usage(
                usage.get("prompt_tokens"),
                usage.get("completion_tokens"),
                cached=cached_tokens(usage),
            )
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue  # n > 1 extra candidates are not streamed
            out.extend(self._read_choice(choice))
            self._note_finish(choice.get("finish_reason"), self.finish_reasons)
        return out

    def _read_choice(self, choice: dict[str, Any]) -> list[Event]:
        """The events of the first choice, before its finish reason."""
        raise NotImplementedError


class ChatStream(OpenAIStream):
    """Reads `chat.completion.chunk` events."""

    def _read_choice(self, choice: dict[str, Any]) -> list[Event]:
        delta = choice.get("delta") or choice.get("message") or {}
        out = self._read_delta(delta)
        if isinstance(choice.get("text"), str) and choice["text"]:
            out.append(TextDelta(choice["text"]))
        return out

    def _read_delta(self, delta: dict[str, Any]) -> list[Event]:
        out: list[Event] = []
        # DeepSeek says reasoning_content, OpenRouter and vLLM say reasoning
        for key in ("reasoning_content", "reasoning"):
            thought = delta.get(key)
            if isinstance(thought, str) and thought:
                out.append(ReasoningDelta(thought))
                break
        content = delta.get("content")
        if isinstance(content, str) and content:
            out.append(TextDelta(content))
        for call in delta.get("tool_calls") or ():
            if not isinstance(call, dict):
                continue
            parts = self._tool_parts(call.get("index", len(self._tools)))
            parts.id = call.get("id") or parts.id
            function = call.get("function") or {}
            parts.name = function.get("name") or parts.name
            if function.get("arguments"):
                parts.arguments.append(function["arguments"])
        return out


def error_event(error: Any) -> StreamError:
    """A stream error from an OpenAI-style `{"error": {...}}` payload."""
    message = error.get("message") if isinstance(error, dict) else str(error)
    code = str(error.get("code") or error.get("type") or "") if isinstance(error, dict) else ""
    kind = ErrorKind.SERVER
    if "context_length" in code or "context" in str(message).lower():
        kind = ErrorKind.CONTEXT_LENGTH
    elif "rate" in code:
        kind = ErrorKind.RATE_LIMITED
    return StreamError(kind, f"the model API reported an error: {message}")
