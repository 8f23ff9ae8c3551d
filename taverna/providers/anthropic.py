"""Anthropic Messages API: request body (system lifted out, alternation, prefill) and stream reader."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from taverna.model.prompt import Prompt
from taverna.providers.events import (
    ErrorKind,
    Event,
    FinishReason,
    ReasoningDelta,
    StreamError,
    TextDelta,
)
from taverna.providers.request import HttpRequest, RequestOptions, endpoint_url, models_listing
from taverna.providers.sampling import Sampling
from taverna.providers.wire import (
    NOT_AN_OBJECT,
    StreamParser,
    WireMessage,
    example_prefixed,
    image_urls,
    lift_leading_system,
    media_type_and_data,
    parse_json,
    text_of,
    to_wire,
    tool_call_fields,
)

DEFAULT_URL = "https://api.anthropic.com/v1"
API_VERSION = "2023-06-01"
# the API requires max_tokens; used only when the preset has no response length
FALLBACK_MAX_TOKENS = 1024

_FINISH = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    "tool_use": FinishReason.TOOL_CALLS,
    "refusal": FinishReason.CONTENT_FILTER,
}

Content = str | list[dict[str, Any]]


def uses_system_prompt(options: RequestOptions) -> bool:
    """Whether leading system messages go to `system` (SillyTavern's setting, default off)."""
    # algo-providers.md §3: off unless asked; Claude 1 and Instant had no system prompt
    if not options.use_system_prompt:
        return False
    return not options.model.startswith(("claude-1", "claude-instant"))


def convert_messages(
    prompt: Prompt, options: RequestOptions
) -> tuple[list[dict[str, Any]], str | None]:
    """The Messages API's `messages` and `system` (None when not lifted out)."""
    messages = to_wire(prompt.messages)
    user, char = options.user_name, options.char_name
    system: str | None = None
    if uses_system_prompt(options):
        system = lift_leading_system(messages, user, char)
        # algo-providers.md §3.1: "human first" is enforced only in this mode
        if not messages or messages[0]["role"] != "user":
            fallback = options.human_sysprompt_message or "[Start a new chat]"
            messages.insert(0, {"role": "user", "content": fallback})
    for message in messages:
        if message["role"] == "system":
            message["content"] = example_prefixed(message, user, char, only_if_missing=False)
            message["role"] = "user"
    if prompt.prefill.rstrip():
        # a blank prefill would end the request on whitespace, which the API refuses
        messages.append({"role": "assistant", "content": prompt.prefill.rstrip()})
    merged: list[dict[str, Any]] = []
    for message in messages:
        pictures = image_urls(message.get("content"))
        role, content = _to_blocks(message)
        previous = merged[-1]["content"] if merged and merged[-1]["role"] == role else None
        if isinstance(previous, list) and _has_picture(previous) and isinstance(content, str):
            # a picture's turn takes the next text into its text block (1.12.6)
            previous[0]["text"] = f"{previous[0]['text']}\n\n{content}"
        elif previous is not None:
            merged[-1]["content"] = _join(previous, content)
        else:
            merged.append({"role": role, "content": content})
        if pictures:
            # prompt-converters.js (1.12.6): a message's picture makes the merged turn its
            # text and that picture (one picture; an earlier one of the same turn is lost)
            media_type, data = media_type_and_data(pictures[0])
            merged[-1]["content"] = [
                {"type": "text", "text": _first_text(merged[-1]["content"])},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": media_type, "data": data},
                },
            ]
    last = merged[-1] if merged else None
    if last and last["role"] == "assistant" and isinstance(last["content"], str):
        # the API refuses a final assistant turn that ends in whitespace
        last["content"] = last["content"].rstrip()
    if options.tools and merged and merged[-1]["role"] == "assistant":
        # algo-providers.md §3.6: Claude allows no prefill together with tools
        merged.append({"role": "user", "content": "."})
    return merged, system


def _has_picture(blocks: list[dict[str, Any]]) -> bool:
    return any(b.get("type") == "image" for b in blocks)


def _first_text(content: Content) -> str:
    if isinstance(content, str):
        return content
    return next((str(b.get("text") or "") for b in content if b.get("type") == "text"), "")


def _to_blocks(message: WireMessage) -> tuple[str, Content]:
    """One wire message as (role, content): plain text, or blocks for tool rounds.

    A message with pictures gives its text here; the caller adds the picture.
    """
    text = text_of(message.get("content"))
    name = message.pop("name", None)
    if name:
        # algo-providers.md §3.4 (1.12.6): every remaining name is prefixed, examples included
        text = f"{name}: {text}"
    if message["role"] == "tool":
        block = {
            "type": "tool_result",
            "tool_use_id": message.get("tool_call_id", ""),
            "content": text,
        }
        return "user", [block]
    calls = message.get("tool_calls")
    if calls:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        for call in calls:
            cid, fname, arguments = tool_call_fields(call)
            parsed = parse_json(arguments)
            blocks.append(
                {
                    "type": "tool_use",
                    "id": cid,
                    "name": fname,
                    "input": parsed if isinstance(parsed, dict) else {},
                }
            )
        return message["role"], blocks
    return message["role"], text


def _join(left: Content, right: Content) -> Content:
    if isinstance(left, str) and isinstance(right, str):
        return f"{left}\n\n{right}"
    as_blocks = [
        part if isinstance(part, list) else [{"type": "text", "text": part}]
        for part in (left, right)
    ]
    return [*as_blocks[0], *as_blocks[1]]


def build_body(prompt: Prompt, options: RequestOptions) -> dict[str, Any]:
    """The exact JSON body POSTed to `/messages` (key order as SillyTavern sends it)."""
    sampling = Sampling.from_preset(prompt.sampling)
    messages, system = convert_messages(prompt, options)
    body: dict[str, Any] = {
        "messages": messages,
        "model": options.model,
        "max_tokens": sampling.max_tokens or FALLBACK_MAX_TOKENS,
        # algo-providers.md §8: Claude gets every custom stop string
        "stop_sequences": list(prompt.stop),
    }
    for key, value in (
        ("temperature", sampling.temperature),
        ("top_p", sampling.top_p),
        ("top_k", sampling.top_k),
    ):
        if value is not None:
            body[key] = value
    body["stream"] = options.stream
    if system is not None:
        body["system"] = _cached_system(system) if options.cache_system_prompt else system
    if options.cache_at_depth >= 0:
        mark_cache_at_depth(messages, options.cache_at_depth)
    if options.tools:
        body["tool_choice"] = {"type": "any" if options.tool_choice == "required" else "auto"}
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
            for t in options.tools
        ]
    return body


CACHE_CONTROL = {"type": "ephemeral"}


def _cached_system(system: str) -> str | list[dict[str, Any]]:
    """The system prompt as one text block the API caches up to (an empty one stays
    text: the API refuses an empty block)."""
    if not system:
        return system
    return [{"type": "text", "text": system, "cache_control": dict(CACHE_CONTROL)}]


def mark_cache_at_depth(messages: list[dict[str, Any]], depth: int) -> None:
    """Put cache breakpoints in the history as SillyTavern's `claude.cachingAtDepth` does.

    Depth counts changes of speaker from the end, after a trailing assistant prefill: the
    last turn before the prefill is depth 0. The turns at `depth` and `depth + 2` get a
    breakpoint on their last block (two breakpoints, so the next turn, two speakers on,
    reads the prefix this one wrote).
    """
    seen = 0
    previous = ""
    in_prefill = True
    for message in reversed(messages):
        role = message["role"]
        if in_prefill and role == "assistant":
            continue
        in_prefill = False
        if role == previous:
            continue
        if seen in (depth, depth + 2):
            _mark_last_block(message)
        if seen == depth + 2:
            return
        seen += 1
        previous = role


def _mark_last_block(message: dict[str, Any]) -> None:
    content = message["content"]
    if isinstance(content, str):
        message["content"] = [
            {"type": "text", "text": content, "cache_control": dict(CACHE_CONTROL)}
        ]
    elif content:
        content[-1] = {**content[-1], "cache_control": dict(CACHE_CONTROL)}


def endpoint(base_url: str, options: RequestOptions) -> str:
    return endpoint_url(base_url, DEFAULT_URL, "/messages")


def auth_headers(key: str) -> dict[str, str]:
    headers = {"anthropic-version": API_VERSION}
    if key:
        headers["x-api-key"] = key
    return headers


def models_request(base_url: str, key: str) -> HttpRequest:
    """The GET request that lists Anthropic's models."""
    return models_listing(base_url, DEFAULT_URL, auth_headers(key))


def preset_options(preset: Mapping[str, Any]) -> dict[str, Any]:
    """The request options a SillyTavern Chat Completion preset sets for Claude."""
    out: dict[str, Any] = {}
    if "claude_use_sysprompt" in preset:
        out["use_system_prompt"] = bool(preset["claude_use_sysprompt"])
    if isinstance(preset.get("human_sysprompt_message"), str):
        out["human_sysprompt_message"] = preset["human_sysprompt_message"]
    return out


_ERRORS = {
    "authentication_error": ErrorKind.AUTH,
    "permission_error": ErrorKind.AUTH,
    "not_found_error": ErrorKind.NOT_FOUND,
    "rate_limit_error": ErrorKind.RATE_LIMITED,
    "overloaded_error": ErrorKind.SERVER,
    "api_error": ErrorKind.SERVER,
    "request_too_large": ErrorKind.CONTEXT_LENGTH,
}


def error_event(payload: Any) -> StreamError:
    """A stream error from Anthropic's `{"type": "error", "error": {type, message}}`."""
    error = payload.get("error", payload) if isinstance(payload, dict) else {}
    kind_name = str(error.get("type", "")) if isinstance(error, dict) else ""
    message = str(error.get("message", "")) if isinstance(error, dict) else str(payload)
    kind = _ERRORS.get(kind_name, ErrorKind.BAD_REQUEST)
    if "too long" in message.lower():
        kind = ErrorKind.CONTEXT_LENGTH
    return StreamError(kind, f"the model API reported an error: {message or kind_name}")


def _tokens(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class MessagesStream(StreamParser):
    """Reads the Messages API's named SSE events (message_start ... message_stop)."""

    def feed(self, event: str, data: str) -> list[Event]:
        if self.finished:
            return []
        payload = parse_json(data)
        if not isinstance(payload, dict):
            return []
        kind = payload.get("type") or event
        if kind == "error":
            self.finished = True
            return [error_event(payload)]
        if kind == "message_start":
            self._note_anthropic_usage((payload.get("message") or {}).get("usage"))
        elif kind == "content_block_start":
            block = payload.get("content_block") or {}
            if block.get("type") == "tool_use":
                parts = self._tool_parts(payload.get("index", 0))
                parts.id, parts.name = block.get("id", ""), block.get("name", "")
            elif block.get("type") == "text" and block.get("text"):
                return [TextDelta(block["text"])]
        elif kind == "content_block_delta":
            return self._read_delta(payload.get("index", 0), payload.get("delta") or {})
        elif kind == "message_delta":
            self._note_finish((payload.get("delta") or {}).get("stop_reason"), _FINISH)
            self._note_anthropic_usage(payload.get("usage"))
        elif kind == "message_stop":
            return self._close()
        return []

    def _note_anthropic_usage(self, usage: Any) -> None:
        """Keep a usage object's counts: the prompt is its uncached input, what was read
        from the cache and what was written to it, added up."""
        if not isinstance(usage, dict):
            return
        fresh = _tokens(usage.get("input_tokens"))
        read = _tokens(usage.get("cache_read_input_tokens"))
        written = _tokens(usage.get("cache_creation_input_tokens"))
        total = fresh + (read or 0) + (written or 0) if fresh is not None else None
        self._note_usage(total, usage.get("output_tokens"), cached=read, written=written)

    def _read_delta(self, index: int, delta: dict[str, Any]) -> list[Event]:
        kind = delta.get("type")
        if kind == "text_delta" and delta.get("text"):
            return [TextDelta(delta["text"])]
        if kind == "thinking_delta" and delta.get("thinking"):
            return [ReasoningDelta(delta["thinking"])]
        if kind == "input_json_delta":
            self._tool_parts(index).arguments.append(delta.get("partial_json", ""))
        return []

    def parse_response(self, body: Any) -> list[Event]:
        if not isinstance(body, dict):
            return [NOT_AN_OBJECT]
        if body.get("type") == "error":
            self.finished = True
            return [error_event(body)]
        out: list[Event] = []
        for i, block in enumerate(body.get("content") or ()):
            if block.get("type") == "text":
                out.append(TextDelta(block.get("text", "")))
            elif block.get("type") == "thinking":
                out.append(ReasoningDelta(block.get("thinking", "")))
            elif block.get("type") == "tool_use":
                parts = self._tool_parts(i)
                parts.id, parts.name = block.get("id", ""), block.get("name", "")
                parts.arguments.append(json.dumps(block.get("input") or {}))
        self._note_anthropic_usage(body.get("usage"))
        self._note_finish(body.get("stop_reason") or "end_turn", _FINISH)
        return out + self._close()
