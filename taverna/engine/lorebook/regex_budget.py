"""The time all user regexes of one turn may spend together.

Every user-written pattern (a lorebook regex key, a regex script) runs with a time limit
of its own, so one pattern that backtracks without end cannot hang a turn. A turn runs
many of them, though: 200 keys that each run to a 50 ms limit, several times a scan,
add up to most of a minute. So a turn also has a budget for its user regexes together.
Each run gets the smaller of its own limit and what the turn has left; once the turn's
time is spent, the remaining regexes are not run at all: a key counts as no match, a
script leaves its text as it was. Every regex that was stopped or skipped is noted
(what, where, why), and the prompt's ledger lists them for the person.

This is the one clock the engine reads, and only to bound time: as long as no limit is
hit, no result depends on it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from taverna.model.prompt import SkippedRegex

__all__ = [
    "LOREBOOK_KEY",
    "REGEX_SCRIPT",
    "TURN_REGEX_BUDGET",
    "RegexBudget",
]

TURN_REGEX_BUDGET = 1.0  # seconds all user regexes of one turn may spend together

LOREBOOK_KEY = "lorebook key"
REGEX_SCRIPT = "regex script"
_EFFECTS = {
    LOREBOOK_KEY: "counted as no match",
    REGEX_SCRIPT: "the text was left as it was",
}

T = TypeVar("T")


def _duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:g} ms"
    return f"{seconds:g} s"


class RegexBudget:
    """One turn's time for user regexes, and the notes of what its limits stopped.

    Make one per turn and hand it to every assembly of that turn (`assemble(regexes=)`);
    `clock` is a monotonic clock in seconds (tests may pass their own).
    """

    def __init__(
        self,
        seconds: float = TURN_REGEX_BUDGET,
        *,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.seconds = seconds
        self.clock = clock
        self.spent = 0.0
        self._notes: dict[tuple[str, str, str, str], int] = {}

    @property
    def left(self) -> float:
        """The seconds this turn's regexes may still spend."""
        return max(0.0, self.seconds - self.spent)

    def run(
        self,
        call: Callable[[float], T],
        *,
        limit: float,
        kind: str,
        source: str,
        pattern: str,
    ) -> T | None:
        """`call(timeout)` within the pattern's `limit` and the turn's time left.

        `call` raises `TimeoutError` when it runs out of time (as the `regex` module does).
        None: it was stopped, or not run because the turn's time was spent.
        """
        left = self.seconds - self.spent
        if left <= 0:
            self._note(kind, source, pattern, self._spent_reason(kind))
            return None
        timeout = min(limit, left)
        began = self.clock()
        try:
            return call(timeout)
        except TimeoutError:
            if timeout < limit:
                reason = self._spent_reason(kind)
            else:
                reason = f"stopped at its {_duration(limit)} limit; {_EFFECTS[kind]}"
            self._note(kind, source, pattern, reason)
            return None
        finally:
            self.spent += max(0.0, self.clock() - began)

    def begin(self) -> None:
        """Start the notes of a new assembly; the time spent so far stays spent."""
        self._notes.clear()

    def skipped(self) -> tuple[SkippedRegex, ...]:
        """What the limits stopped since `begin`, in the order first seen."""
        return tuple(
            SkippedRegex(kind, source, pattern, reason, count)
            for (kind, source, pattern, reason), count in self._notes.items()
        )

    def _spent_reason(self, kind: str) -> str:
        return (
            f"not run: this turn's {_duration(self.seconds)} for user regexes was spent; "
            f"{_EFFECTS[kind]}"
        )

    def _note(self, kind: str, source: str, pattern: str, reason: str) -> None:
        key = (kind, source, pattern, reason)
        self._notes[key] = self._notes.get(key, 0) + 1
