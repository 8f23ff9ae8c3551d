"""A generation's events survive the trip through text another process reads."""

from __future__ import annotations

import json

import pytest

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
from taverna.services.turns import Completed, Ending, Posted, Queued, Started, ToolResult
from taverna.services.turns.event_codec import decode, encode

EVENTS = [
    Queued(3),
    Started("g1", "c1", GenerationType.SWIPE, "n1"),
    Started("g2", "c1", GenerationType.NORMAL, None),
    Posted("n0", 4),
    TextDelta("Hello, 旅人 <b>&"),
    ReasoningDelta("thinking"),
    ToolCall("t1", "roll", '{"sides": 6}'),
    ToolResult("t1", "roll", "4"),
    Usage(12, None),
    Finish(FinishReason.LENGTH, "max_tokens"),
    StreamError(ErrorKind.RATE_LIMITED, "slow down", 429),
    Completed(Ending.SAVED, "Hello", node_id="n2", revision=7),
    Completed(Ending.FAILED, "Hel", draft_id="d1", error="cut", cause="interrupted"),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: type(e).__name__)
def test_every_event_reads_back_equal(event: object) -> None:
    back = decode(encode(event))  # type: ignore[arg-type]
    assert back == event
    assert type(back) is type(event)


def test_an_unknown_or_malformed_event_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown event type"):
        decode('{"type": "Exploit", "text": "x"}')
    with pytest.raises(ValueError, match="JSON object"):
        decode("[1, 2]")


def test_an_unreachable_redis_is_named(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from taverna.errors import TavernaError
    from taverna.services.house.workspace import open_workspace

    with pytest.raises(TavernaError, match=r"cannot reach Redis at redis://127\.0\.0\.1:9/0"):
        open_workspace(tmp_path / "data", redis_url="redis://127.0.0.1:9/0")
    assert not (tmp_path / "data").exists()  # nothing was opened


@pytest.mark.parametrize(
    "text", ["", "plain", 'quote " back\\slash', "line\nbreak\ttab", "旅人 \u2028 😀"]
)
def test_a_text_delta_is_written_as_the_general_way_writes_it(text: str) -> None:
    """Text deltas (one a token) take a short way to JSON: the same object, read back equal."""
    written = encode(TextDelta(text))
    assert json.loads(written) == {"type": "TextDelta", "text": text}
    assert written == json.dumps({"type": "TextDelta", "text": text}, ensure_ascii=False)
    assert decode(written) == TextDelta(text)
