"""Server-sent events read straight off a response body's bytes.

A model's answer arrives as one small chunk per token, and a server streams many answers
at once; reading them through httpx's line and text iterators and an SSE library costs
several nested async generators per chunk. This decoder takes the bytes as they come and
gives back whole events, with the field rules of the HTML standard: lines end in CRLF,
LF or CR (a CRLF may be split between two chunks), `:` starts a comment, one space after
the colon is dropped, several `data` lines join with a newline, and a blank line ends
the event. An event with neither a name nor data is not passed on; what is left when the
body ends without a blank line is dropped, as browsers do.
"""

from __future__ import annotations

from dataclasses import dataclass

_LINE_ENDS = (b"\n", b"\r")
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class ServerEvent:
    """One event: its name ("message" when it has none), data, and the last id seen."""

    event: str
    data: str
    id: str = ""


class EventStreamDecoder:
    """Bytes in, whole events out; keeps the part of a line not yet ended."""

    __slots__ = ("_data", "_event", "_id", "_rest", "_skip_lf", "_started")

    def __init__(self) -> None:
        self._rest = b""
        self._skip_lf = False
        self._started = False
        self._event = ""
        self._data: list[str] = []
        self._id = ""

    def feed(self, chunk: bytes) -> list[ServerEvent]:
        """The events this chunk completes, in order."""
        if self._skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._skip_lf = False
        buffer = self._rest + chunk if self._rest else chunk
        if not self._started:
            if _BOM.startswith(buffer):
                self._rest = buffer  # the body so far may be the start of a byte order mark
                return []
            self._started = True
            buffer = buffer.removeprefix(_BOM)
        lines = buffer.splitlines(keepends=True)
        if lines and not lines[-1].endswith(_LINE_ENDS):
            self._rest = lines.pop()
        else:
            self._rest = b""
        if lines and lines[-1].endswith(b"\r"):
            self._skip_lf = True  # a lone CR so far: an LF opening the next chunk ends it
        events: list[ServerEvent] = []
        for line in lines:
            event = self._line(line.rstrip(b"\r\n"))
            if event is not None:
                events.append(event)
        return events

    def _line(self, line: bytes) -> ServerEvent | None:
        if not line:
            return self._dispatch()
        if line[:1] == b":":
            return None
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        field = name.decode("utf-8", "replace")
        if field == "data":
            self._data.append(value.decode("utf-8", "replace"))
        elif field == "event":
            self._event = value.decode("utf-8", "replace")
        elif field == "id" and b"\0" not in value:
            self._id = value.decode("utf-8", "replace")
        return None

    def _dispatch(self) -> ServerEvent | None:
        event, data = self._event, self._data
        self._event, self._data = "", []
        if not event and not data:
            return None
        return ServerEvent(event or "message", "\n".join(data), self._id)
