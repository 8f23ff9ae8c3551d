"""The event-stream decoder: the HTML standard's field rules, in any chunking."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from taverna.providers.event_stream import EventStreamDecoder, ServerEvent


def _all(chunks: list[bytes]) -> list[ServerEvent]:
    decoder = EventStreamDecoder()
    return [event for chunk in chunks for event in decoder.feed(chunk)]


def _reference(body: bytes) -> list[ServerEvent]:
    """The standard's algorithm over the whole body at once, written plainly."""
    text = body.decode("utf-8", "replace").removeprefix("\ufeff")
    lines = re.split(r"\r\n|\r|\n", text)
    lines.pop()  # what follows the last line end is not a line yet
    events: list[ServerEvent] = []
    name, data, last_id = "", [], ""
    for line in lines:
        if line == "":
            if name or data:
                events.append(ServerEvent(name or "message", "\n".join(data), last_id))
            name, data = "", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            data.append(value)
        elif field == "event":
            name = value
        elif field == "id" and "\0" not in value:
            last_id = value
    return events


def test_openai_style_stream() -> None:
    body = (
        b'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\n'
        b": keep-alive\n\n"
        b'data: {"choices":[{"delta":{"content":" there"}}]}\n\n'
        b"data: [DONE]\n\n"
    )
    events = _all([body])
    assert [e.data for e in events] == [
        '{"choices":[{"delta":{"content":"Hi"}}]}',
        '{"choices":[{"delta":{"content":" there"}}]}',
        "[DONE]",
    ]
    assert {e.event for e in events} == {"message"}


def test_named_events_multiline_data_and_ids() -> None:
    body = b"event: message_start\r\nid: 7\r\ndata: a\r\ndata:b\r\n\r\nevent: ping\n\n"
    assert _all([body]) == [
        ServerEvent("message_start", "a\nb", "7"),
        ServerEvent("ping", "", "7"),
    ]


def test_crlf_split_between_chunks_is_one_line_end() -> None:
    assert _all([b"data: x\r", b"\n\r", b"\n"]) == [ServerEvent("message", "x")]


def test_lone_cr_ends_lines_without_waiting_for_the_next_chunk() -> None:
    decoder = EventStreamDecoder()
    assert decoder.feed(b"data: x\r\r") == [ServerEvent("message", "x")]


def test_multibyte_text_split_between_chunks() -> None:
    body = "data: 守灯人\n\n".encode()
    assert _all([body[:8], body[8:]]) == [ServerEvent("message", "守灯人")]


def test_an_event_not_ended_by_a_blank_line_is_dropped() -> None:
    assert _all([b"data: one\n\ndata: cut"]) == [ServerEvent("message", "one")]


def test_byte_order_mark_at_the_start_is_dropped() -> None:
    assert _all([b"\xef\xbb", b"\xbfdata: x\n\n"]) == [ServerEvent("message", "x")]


_pieces = st.sampled_from(
    [b"data: ", b"data:", b"event: ", b"id: ", b"id: 1\0", b": c", b"x", b"{}", b" ",
     b"\n", b"\r", b"\r\n", "é".encode(), "灯".encode(), b"retry: 5", b"dat", b":"]
)  # fmt: skip


@given(st.lists(_pieces, max_size=40), st.data())
def test_any_chunking_gives_the_standards_events(parts: list[bytes], data: st.DataObject) -> None:
    body = b"".join(parts)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=8)))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert _all(chunks) == _reference(body)
