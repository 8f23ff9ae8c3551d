"""The one event stream every provider's answer is normalised to."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the reply's text, in order."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of the model's visible reasoning ("thinking"), kept apart from the reply."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One complete call of a function tool; `arguments` is the JSON text the model wrote."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts the provider reported; `None` where it reported nothing.

    `input_tokens` is every token of the prompt, cached or not (Anthropic's three counts
    added up); `cached_tokens` the part of them read from the API's prompt cache (OpenAI's
    `cached_tokens`, DeepSeek's `prompt_cache_hit_tokens`, Anthropic's
    `cache_read_input_tokens`); `cache_write_tokens` the part written to it (Anthropic's
    `cache_creation_input_tokens`). The rest of the prompt was new to the API.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None


class FinishReason(StrEnum):
    """Why the model stopped, in one vocabulary for every API."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_CALLS = "tool_calls"
    CONTENT_FILTER = "content_filter"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Finish:
    """The model finished; `raw` is the provider's own word for why."""

    reason: FinishReason
    raw: str = ""


class ErrorKind(StrEnum):
    """What went wrong, in words a person can act on."""

    AUTH = "auth"
    NOT_FOUND = "not_found"
    RATE_LIMITED = "rate_limited"
    CONTEXT_LENGTH = "context_length"
    BAD_REQUEST = "bad_request"
    SERVER = "server"
    TIMEOUT = "timeout"
    NETWORK = "network"
    INTERRUPTED = "interrupted"
    PROTOCOL = "protocol"


@dataclass(frozen=True, slots=True)
class StreamError:
    """The request failed or the stream broke; `message` never contains the API key."""

    kind: ErrorKind
    message: str
    status: int | None = None


Event = TextDelta | ReasoningDelta | ToolCall | Usage | Finish | StreamError
