"""Shared pieces of the chat wire formats: OpenAI-style message dicts and stream parsing."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from taverna.model.prompt import PromptMessage
from taverna.providers.events import (
    ErrorKind,
    Event,
    Finish,
    FinishReason,
    StreamError,
    ToolCall,
    Usage,
)

WireMessage = dict[str, Any]

# what a reader answers for a whole (non-streamed) response body that is no JSON object
NOT_AN_OBJECT = StreamError(ErrorKind.PROTOCOL, "the response was not a JSON object")


def tool_call_fields(call: Mapping[str, Any]) -> tuple[str, str, str]:
    """(id, name, arguments JSON) of a prompt message's tool call.

    A call is stored as `{"id", "name", "arguments"}`; the OpenAI shape
    `{"id", "function": {"name", "arguments"}}` is read too.
    """
    function = call.get("function")
    if isinstance(function, Mapping):
        name, arguments = function.get("name", ""), function.get("arguments", "")
    else:
        name, arguments = call.get("name", ""), call.get("arguments", "")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return str(call.get("id", "")), str(name), arguments or "{}"


def to_wire(messages: Sequence[PromptMessage]) -> list[WireMessage]:
    """The prompt's messages as OpenAI Chat Completions message dicts."""
    out: list[WireMessage] = []
    for message in messages:
        wire: WireMessage = {"role": message.role.value}
        if message.name and message.role.value != "tool":
            wire["name"] = message.name
        wire["content"] = message.content
        if message.images:
            # openai.js Message.addImage: the text, then each picture as an `image_url` part
            wire["content"] = [
                {"type": "text", "text": message.content},
                *(
                    {"type": "image_url", "image_url": {"url": i.data_url, "detail": i.detail}}
                    for i in message.images
                ),
            ]
        if message.tool_calls:
            wire["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                for cid, name, args in (tool_call_fields(c) for c in message.tool_calls)
            ]
        if message.tool_call_id:
            wire["tool_call_id"] = message.tool_call_id
        out.append(wire)
    return out


def text_of(content: Any) -> str:
    """A wire message's text: the string, or the first text part of a part list (where
    SillyTavern's converters read it)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "text":
                return str(part.get("text") or "")
    return ""


def image_urls(content: Any) -> list[str]:
    """The `data:` URLs of a part list's `image_url` parts, in order."""
    if not isinstance(content, list):
        return []
    return [
        str(part["image_url"].get("url") or "")
        for part in content
        if isinstance(part, Mapping)
        and part.get("type") == "image_url"
        and isinstance(part.get("image_url"), Mapping)
    ]


def with_text(content: Any, text: str) -> Any:
    """`content` with its text replaced: a string, or the part list with its first text
    part changed."""
    if not isinstance(content, list):
        return text
    out = [dict(part) if isinstance(part, Mapping) else part for part in content]
    for part in out:
        if isinstance(part, dict) and part.get("type") == "text":
            part["text"] = text
            return out
    return [{"type": "text", "text": text}, *out]


def media_type_and_data(data_url: str) -> tuple[str, str]:
    """(MIME type, base64 payload) of a `data:` URL, split as SillyTavern splits it."""
    head, _, data = data_url.partition(",")
    media = head.split(";", 1)[0]
    return (media.split(":", 1)[1] if ":" in media else ""), data


def example_prefixed(message: WireMessage, user: str, char: str, *, only_if_missing: bool) -> str:
    """A system message's text with the example speaker's name in front."""
    text = text_of(message.get("content"))
    name = message.get("name")
    speaker = user if name == "example_user" else char if name == "example_assistant" else ""
    if speaker and not (only_if_missing and text.startswith(f"{speaker}: ")):
        text = f"{speaker}: {text}"
    return text


def lift_leading_system(messages: list[WireMessage], user: str, char: str, *, keep: int = 0) -> str:
    """Take the leading system messages out of `messages` as one system text.

    Example messages get their speaker's name in front unless they have it already;
    at least `keep` messages stay in `messages`.
    """
    lead: list[str] = []
    while len(messages) > keep and messages[0]["role"] == "system":
        lead.append(example_prefixed(messages.pop(0), user, char, only_if_missing=True))
    return "\n\n".join(lead).strip()


def parse_json(data: str) -> Any:
    """One SSE data payload as JSON, or None when it is not JSON."""
    try:
        return json.loads(data)
    except json.JSONDecodeError:
        return None


@dataclass
class ToolCallParts:
    """A tool call being assembled from streamed pieces."""

    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    def complete(self) -> ToolCall:
        return ToolCall(id=self.id, name=self.name, arguments="".join(self.arguments) or "{}")


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class StreamParser:
    """Turns one API's stream payloads into events; subclasses read their API's shapes.

    `feed` takes one SSE event (or one line of a line-delimited stream) and returns the
    events it completes; `end` is called when the body ends and reports a cut stream
    as an `interrupted` error.
    """

    def __init__(self) -> None:
        self.finished = False
        self._finish: Finish | None = None
        self._usage = Usage()
        self._tools: dict[int | str, ToolCallParts] = {}

    def feed(self, event: str, data: str) -> list[Event]:
        raise NotImplementedError

    def parse_response(self, body: Any) -> list[Event]:
        """Events of a complete (non-streamed) response body."""
        raise NotImplementedError

    def end(self) -> list[Event]:
        """Events owed when the body ends: the finish, or an error if it never came."""
        if self.finished:
            return []
        if self._finish is not None:
            return self._close()
        self.finished = True
        return [
            StreamError(
                ErrorKind.INTERRUPTED,
                "the model's stream ended before the reply was complete",
            )
        ]

    def _note_usage(
        self,
        input_tokens: Any = None,
        output_tokens: Any = None,
        *,
        cached: Any = None,
        written: Any = None,
    ) -> None:
        """Keep the counts the API reported (a later report of a count replaces it)."""
        known = self._usage
        self._usage = Usage(
            *(
                new if _count(new) else old
                for new, old in (
                    (input_tokens, known.input_tokens),
                    (output_tokens, known.output_tokens),
                    (cached, known.cached_tokens),
                    (written, known.cache_write_tokens),
                )
            )
        )

    def _note_finish(self, raw: Any, reasons: Mapping[str, FinishReason]) -> None:
        """Keep the API's finish reason `raw` (when it sent one) for the closing events."""
        if raw:
            self._finish = Finish(reasons.get(raw, FinishReason.OTHER), str(raw))

    def _tool_parts(self, key: int | str) -> ToolCallParts:
        return self._tools.setdefault(key, ToolCallParts())

    def _close(self, finish: Finish | None = None) -> list[Event]:
        """The trailing events: assembled tool calls, usage, finish."""
        if self.finished:
            return []
        self.finished = True
        out: list[Event] = [parts.complete() for parts in self._tools.values()]
        self._tools.clear()
        if self._usage != Usage():
            out.append(self._usage)
        out.append(finish or self._finish or Finish(FinishReason.STOP))
        return out


class JsonChunkStream(StreamParser):
    """A stream whose every event carries one JSON object; a whole response is one such chunk.

    `done_marker` is the non-JSON data that ends the stream, for APIs that send one.
    """

    done_marker: ClassVar[str | None] = None

    def feed(self, event: str, data: str) -> list[Event]:
        if self.finished:
            return []
        if self.done_marker is not None and data.strip() == self.done_marker:
            return self._close()
        chunk = parse_json(data)
        if not isinstance(chunk, dict):
            return []
        return self._read_chunk(chunk)

    def _read_chunk(self, chunk: dict[str, Any]) -> list[Event]:
        """The events one chunk carries."""
        raise NotImplementedError

    def parse_response(self, body: Any) -> list[Event]:
        if not isinstance(body, dict):
            return [NOT_AN_OBJECT]
        return self._read_chunk(body) + self._close()
