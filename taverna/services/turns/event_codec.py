"""A generation's events as JSON text and back: what another process reads of a run."""

from __future__ import annotations

import json
from dataclasses import fields
from enum import Enum
from typing import Any

from taverna.engine.assembly.context import GenerationType
from taverna.providers.events import (
    ErrorKind,
    Finish,
    FinishReason,
    ReasoningDelta,
    StreamError,
    TextDelta,
    ToolCall,
    Usage,
)
from taverna.services.turns.runs import (
    Completed,
    Ending,
    GenerationEvent,
    Posted,
    Queued,
    Started,
    ToolResult,
)

_TYPES: dict[str, type[Any]] = {
    cls.__name__: cls
    for cls in (
        TextDelta,
        ReasoningDelta,
        ToolCall,
        Usage,
        Finish,
        StreamError,
        Queued,
        Started,
        Posted,
        ToolResult,
        Completed,
    )
}
# The fields that hold an enumeration, read back into it.
_ENUMS: dict[tuple[str, str], type[Enum]] = {
    ("Finish", "reason"): FinishReason,
    ("StreamError", "kind"): ErrorKind,
    ("Started", "kind"): GenerationType,
    ("Completed", "outcome"): Ending,
}


def encode(event: GenerationEvent) -> str:
    """One event as a JSON object naming its type."""
    if type(event) is TextDelta:
        # the commonest by far (one a token): written directly, as the general way would
        return '{"type": "TextDelta", "text": ' + json.dumps(event.text, ensure_ascii=False) + "}"
    data: dict[str, Any] = {"type": type(event).__name__}
    for item in fields(event):
        value = getattr(event, item.name)
        data[item.name] = value.value if isinstance(value, Enum) else value
    return json.dumps(data, ensure_ascii=False)


def decode(text: str | bytes) -> GenerationEvent:
    """The event `encode` wrote; a ValueError for anything else."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("an event is a JSON object")
    name = data.pop("type", None)
    cls = _TYPES.get(str(name))
    if cls is None:
        raise ValueError(f"unknown event type {name!r}")
    for key, value in list(data.items()):
        enum = _ENUMS.get((cls.__name__, key))
        if enum is not None and value is not None:
            data[key] = enum(value)
    event: GenerationEvent = cls(**data)
    return event
