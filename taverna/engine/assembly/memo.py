"""Work kept from one turn to the next, holding only what recent turns used.

A chat's prompt parts and message counts are reused while their message is
unchanged. Kept in a plain dict they would pile up: every edit, swipe and message that
scrolls out of the window leaves its old entry behind for as long as the chat is used.
Here an entry lives while turns use it: `next_turn()` lets go of whatever the turn
before it did not read or write, so the memo holds about two windows' worth.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

_MISSING: Any = object()


class TurnMemo:
    """A map whose entries last while each turn (see `next_turn`) reads them."""

    __slots__ = ("_before", "_compact_at", "_now")

    def __init__(self) -> None:
        self._now: dict[Any, Any] = {}
        self._before: dict[Any, Any] = {}
        self._compact_at = 0

    def get(self, key: Any, default: Any = None) -> Any:
        """The entry under `key`, kept on for the next turn; `default` when none."""
        found = self._now.get(key, _MISSING)
        if found is not _MISSING:
            return found
        before = self._before
        found = before.pop(key, _MISSING)
        if found is _MISSING:
            return default
        self._now[key] = found
        if len(before) == self._compact_at:
            # Most of the last turn's entries moved on: a dict does not shrink as entries
            # leave it, so the few left move to a table of their own size (an empty one
            # when none is left), rather than holding the last turn's table until the next.
            self._before = dict(before)
        return found

    def __setitem__(self, key: Any, value: Any) -> None:
        self._now[key] = value

    def __len__(self) -> int:
        return len(self._now) + len(self._before)

    def entries(self) -> Iterator[tuple[Any, Any]]:
        """The entries, those this turn read first."""
        return itertools.chain(self._now.items(), self._before.items())

    def next_turn(self) -> None:
        """A new turn begins: entries the last turn did not use go."""
        self._before = self._now
        self._now = {}
        self._compact_at = len(self._before) // 8
