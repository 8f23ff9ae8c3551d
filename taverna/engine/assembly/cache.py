"""Where this turn's prompt stops sharing a prefix with the previous turn's.

A provider's prompt cache (OpenAI, Anthropic, llama.cpp's KV cache) reuses the
longest prefix two requests share; the first differing character is where the
cache breaks. Knowing which part caused it tells the user what to move (see the
prompt layouts of `layouts.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from taverna.model.prompt import LedgerItem, Prompt


@dataclass(frozen=True, slots=True)
class CacheBreak:
    """The first difference between two prompts.

    `message` is the index of the first differing message (Chat Completion) or
    None for a text prompt; `offset` is the character offset inside that message's
    content (or the text); `shared` the number of characters of the serialized
    prompt both share; `cause` the ledger item of the current prompt at that point
    and `was` the previous prompt's (a depth injection that moved shows up there).
    `identical` is true when nothing differs.
    """

    identical: bool
    message: int | None = None
    offset: int = 0
    shared: int = 0
    cause: LedgerItem | None = None
    was: LedgerItem | None = None


def _common_prefix(a: str, b: str) -> int:
    limit = min(len(a), len(b))
    i = 0
    while i < limit and a[i] == b[i]:
        i += 1
    return i


def _piece_at(prompt: Prompt, offset: int) -> LedgerItem | None:
    """The text prompt's piece holding `offset` (its ledger items are its pieces in order)."""
    pieces = [i for i in prompt.ledger.items if i.included and i.position is not None]
    found = None
    start = 0
    for item in sorted(pieces, key=lambda i: i.position or 0):
        found = item
        if offset < start + len(item.text):
            break
        start += len(item.text)
    return found


def first_difference(previous: Prompt, current: Prompt) -> CacheBreak:
    """Where `current` stops sharing a prefix with `previous`, and which part caused it."""
    positioned = [i for i in current.ledger.items if i.included and i.position is not None]
    if current.kind == "text" or previous.kind == "text":
        offset = _common_prefix(previous.text, current.text)
        if offset == len(previous.text) == len(current.text) and previous.kind == current.kind:
            return CacheBreak(True, None, offset, offset)
        return CacheBreak(
            False, None, offset, offset, _piece_at(current, offset), _piece_at(previous, offset)
        )
    shared = 0
    old, new = previous.messages, current.messages
    before = [i for i in previous.ledger.items if i.included and i.position is not None]

    def at(items: list[LedgerItem], index: int) -> LedgerItem | None:
        return next((i for i in items if i.position == index), None)

    for index in range(max(len(old), len(new))):
        if index >= len(old) or index >= len(new):
            return CacheBreak(False, index, 0, shared, at(positioned, index), at(before, index))
        a, b = old[index], new[index]
        if a.role != b.role or a.name != b.name:
            return CacheBreak(False, index, 0, shared, at(positioned, index), at(before, index))
        if a.content != b.content:
            offset = _common_prefix(a.content, b.content)
            return CacheBreak(
                False, index, offset, shared + offset, at(positioned, index), at(before, index)
            )
        shared += len(a.content)
    return CacheBreak(True, None, 0, shared)
