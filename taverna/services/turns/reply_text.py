"""A reply's text as stored: cut where the model ran into a stop string."""

from __future__ import annotations

from collections.abc import Sequence


def trim_at_stop(text: str, stops: Sequence[str]) -> str:
    """The reply cut at the first stop string, and without a stop string's start at its end.

    APIs take only some stop strings (OpenAI four), and a reply cut by its length can
    end halfway into one; SillyTavern cleans replies the same way (algo-providers.md §8).
    """
    cut = len(text)
    for stop in stops:
        if stop:
            found = text.find(stop)
            if 0 <= found < cut:
                cut = found
    text = text[:cut]
    for stop in stops:
        for size in range(min(len(stop) - 1, len(text)), 0, -1):
            if text.endswith(stop[:size]):
                if stop[:size].strip():
                    text = text[:-size]
                break
    return text
