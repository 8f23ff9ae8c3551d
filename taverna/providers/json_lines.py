"""Newline-delimited JSON read straight off a response body's bytes (Ollama's streams).

Each line is one JSON object; a line may be split between two chunks, and a blank line is
nothing. Lines come out as the server-sent events `event_stream` gives, one a line, so a
stream reader takes either kind alike.
"""

from __future__ import annotations

from taverna.providers.event_stream import ServerEvent


class JsonLinesDecoder:
    """Bytes in, whole lines out (as `message` events); keeps the part of a line not yet ended."""

    __slots__ = ("_rest",)

    def __init__(self) -> None:
        self._rest = b""

    def feed(self, chunk: bytes) -> list[ServerEvent]:
        """The lines this chunk completes, in order."""
        *lines, self._rest = (self._rest + chunk).split(b"\n")
        return [
            ServerEvent("message", text)
            for line in lines
            if (text := line.decode("utf-8", errors="replace").strip())
        ]
