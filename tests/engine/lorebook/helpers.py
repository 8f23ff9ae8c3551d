"""Small builders for lorebook activation tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from taverna.engine.lorebook import Activation, BookInPlay, BookSource, ScanMessage, activate
from taverna.model.lorebook import Entry, Lorebook, WorldInfoSettings


def book(*entries: Entry, name: str = "Lore") -> Lorebook:
    return Lorebook(name=name, entries=tuple(entries))


def entry(uid: int, *keys: str, content: str | None = None, **fields: Any) -> Entry:
    return Entry(uid=uid, key=keys, content=content if content is not None else f"E{uid}", **fields)


def chat(*texts: str, names: Sequence[str] = ("User", "Char")) -> list[ScanMessage]:
    """Messages oldest first; names alternate so that the last one is the user's."""
    count = len(texts)
    return [
        ScanMessage(text=text, name=names[0] if (count - 1 - i) % 2 == 0 else names[1])
        for i, text in enumerate(texts)
    ]


def words(text: str) -> int:
    return len(text.split())


def run(
    entries: Sequence[Entry] | Lorebook,
    messages: Sequence[ScanMessage] | str,
    *,
    settings: WorldInfoSettings | None = None,
    source: BookSource = BookSource.GLOBAL,
    max_context: int = 100_000,
    **options: Any,
) -> Activation:
    lore = entries if isinstance(entries, Lorebook) else book(*entries)
    if isinstance(messages, str):
        messages = chat(messages)
    return activate(
        [BookInPlay(lore, source)],
        messages,
        max_context=max_context,
        count_tokens=options.pop("count_tokens", words),
        settings=settings or WorldInfoSettings(),
        **options,
    )


def uids(result: Activation) -> list[int]:
    return [item.uid for item in result.entries]


def outcome(result: Activation, uid: int, book_name: str = "Lore") -> str:
    for record in result.trace():
        if record.uid == uid and record.book == book_name:
            return record.outcome.value
    raise AssertionError(f"no trace for {book_name}.{uid}")
