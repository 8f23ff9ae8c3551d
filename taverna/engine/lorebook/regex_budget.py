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
# the code of a note's reason, by the kind of regex: `<kind>_stopped`, `<kind>_not_run`
_CODES = {LOREBOOK_KEY: "regex_key", REGEX_SCRIPT: "regex_script"}

T = TypeVar("T")


def _duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:g} ms"
    return f"{seconds:g} s"


def _reason(kind: str, stopped: bool, seconds: float) -> str:
    """Why a regex was stopped (its own limit) or not run (the turn's time was spent)."""
    if stopped:
        return f"stopped at its {_duration(seconds)} limit; {_EFFECTS[kind]}"
    return f"not run: this turn's {_duration(seconds)} for user regexes was spent; {_EFFECTS[kind]}"


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
        # (kind, source, pattern, stopped, seconds): how often
        self._notes: dict[tuple[str, str, str, bool, float], int] = {}

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
            self._note(kind, source, pattern, False, self.seconds)
            return None
        timeout = min(limit, left)
        began = self.clock()
        try:
            return call(timeout)
        except TimeoutError:
            if timeout < limit:
                self._note(kind, source, pattern, False, self.seconds)
            else:
                self._note(kind, source, pattern, True, limit)
            return None
        finally:
            self.spent += max(0.0, self.clock() - began)

    def begin(self) -> None:
        """Start the notes of a new assembly; the time spent so far stays spent."""
        self._notes.clear()

    def skipped(self) -> tuple[SkippedRegex, ...]:
        """What the limits stopped since `begin`, in the order first seen."""
        return tuple(
            SkippedRegex(
                kind,
                source,
                pattern,
                _reason(kind, stopped, seconds),
                count,
                f"{_CODES[kind]}_{'stopped' if stopped else 'not_run'}",
                {"ms": f"{seconds * 1000:g}"},
            )
            for (kind, source, pattern, stopped, seconds), count in self._notes.items()
        )

    def _note(self, kind: str, source: str, pattern: str, stopped: bool, seconds: float) -> None:
        key = (kind, source, pattern, stopped, seconds)
        self._notes[key] = self._notes.get(key, 0) + 1
