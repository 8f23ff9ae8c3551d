"""A turn's time for user regexes: every regex key and regex script of a turn together.

The clocks here are counters, not the wall clock: each reading advances a fixed step, so
which regexes run and which are skipped is decided by counting, and the tests are exact.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from taverna.engine.lorebook.jsregex import REGEX_TIMEOUT, parse_regex_key
from taverna.engine.lorebook.regex_budget import LOREBOOK_KEY, REGEX_SCRIPT, RegexBudget
from taverna.model.lorebook import EntryOutcome

from .helpers import entry, run

# Backtracks without end on a long run of "a" that does not end the text; each distinct.
TRAP = "/(a+)+$|q{}z/"
LONG = "a" * 5000 + "b"


def ticking(step: float) -> Callable[[], float]:
    """A clock that advances `step` seconds each time it is read."""
    now = [0.0]

    def clock() -> float:
        now[0] += step
        return now[0]

    return clock


def test_runs_within_the_time_left_and_then_skips() -> None:
    budget = RegexBudget(2.0, clock=ticking(0.5))  # each run costs 0.5 s
    timeouts: list[float] = []

    def call(timeout: float) -> str:
        timeouts.append(timeout)
        return "ran"

    outcomes = [
        budget.run(call, limit=0.75, kind=LOREBOOK_KEY, source=f"B/{i}", pattern="/x/")
        for i in range(6)
    ]
    assert outcomes == ["ran"] * 4 + [None] * 2
    # Each run may take its own limit or what the turn has left, the smaller.
    assert timeouts == [0.75, 0.75, 0.75, 0.5]
    skipped = budget.skipped()
    assert [s.source for s in skipped] == ["B/4", "B/5"]
    assert all("not run: this turn's 2 s for user regexes was spent" in s.reason for s in skipped)
    assert all(s.reason.endswith("counted as no match") for s in skipped)


def test_a_stopped_run_says_which_limit_stopped_it() -> None:
    budget = RegexBudget(1.0, clock=ticking(0.1))

    def runaway(timeout: float) -> bool:
        raise TimeoutError

    assert budget.run(runaway, limit=0.05, kind=REGEX_SCRIPT, source="s", pattern="/p/") is None
    assert budget.run(runaway, limit=0.05, kind=REGEX_SCRIPT, source="s", pattern="/p/") is None
    (note,) = budget.skipped()
    assert note.count == 2
    assert note.reason == "stopped at its 50 ms limit; the text was left as it was"
    # the page says it by its code, the time in milliseconds
    assert (note.code, dict(note.params)) == ("regex_script_stopped", {"ms": "50"})
    assert note.to_json()["code"] == "regex_script_stopped"
    # A run cut short by the turn's time (less left than its own limit) says so.
    short = RegexBudget(0.02, clock=ticking(0.0))
    assert short.run(runaway, limit=0.05, kind=LOREBOOK_KEY, source="B/1", pattern="/p/") is None
    assert "this turn's 20 ms for user regexes was spent" in short.skipped()[0].reason
    assert (short.skipped()[0].code, dict(short.skipped()[0].params)) == (
        "regex_key_not_run",
        {"ms": "20"},
    )
    # A new assembly of the same turn starts new notes; the time spent stays spent.
    budget.begin()
    assert budget.skipped() == () and budget.spent == pytest.approx(0.2)


def test_regex_keys_beyond_the_turns_time_count_as_no_match_and_say_so() -> None:
    shared = [entry(i, "/lantern/i") for i in range(3)]
    distinct = [entry(i, f"/lantern|q{i}z/") for i in range(3, 8)]
    budget = RegexBudget(2.0, clock=ticking(0.5))  # four runs' worth of time
    activation = run([*shared, *distinct], "The lantern is lit.", regexes=budget)
    # The three entries share one key, which runs once for them all; then three more run.
    assert {e.entry.uid for e in activation.entries} == {0, 1, 2, 3, 4, 5}
    trace = {t.uid: t for t in activation.decisions()}
    for uid in (6, 7):
        assert trace[uid].outcome is EntryOutcome.NO_MATCH
        assert "stopped by a time limit" in trace[uid].reason
    assert [s.source for s in budget.skipped()] == ["Lore/6", "Lore/7"]


def test_two_hundred_runaway_keys_stop_once_the_turns_time_is_spent() -> None:
    """The failure this guards against: each key alone stays within its 50 ms, but 200 of
    them, run on every pass of the scan, took most of a minute."""
    entries = [entry(i, TRAP.format(i)) for i in range(200)]
    budget = RegexBudget(0.2)
    activation = run(entries, LONG, regexes=budget)
    assert activation.entries == ()
    assert budget.spent < 0.2 + 2.0  # the last run overshoots by one regex's reaction time
    notes = budget.skipped()
    assert sorted(int(n.source.split("/")[1]) for n in notes) == list(range(200))
    assert {n.pattern for n in notes} == {TRAP.format(i) for i in range(200)}
    stopped = [n for n in notes if n.reason.startswith("stopped at its")]
    skipped = [n for n in notes if n.reason.startswith("not run")]
    assert len(stopped) + len(skipped) == 200 and len(skipped) >= 190
    assert all(n.count == 1 for n in notes)  # one run per key and scan text


def test_a_regex_key_runs_once_per_scan_text() -> None:
    """Many entries, several passes: one run of the key (two clock readings) in all."""
    readings = [0]

    def clock() -> float:
        readings[0] += 1
        return 0.0

    entries = [entry(i, "/lantern/", content="the lantern again") for i in range(50)]
    budget = RegexBudget(1.0, clock=clock)
    activation = run(entries, "a lantern", regexes=budget)
    assert len(activation.entries) == 50
    assert readings[0] == 2


def test_a_key_without_a_budget_keeps_its_own_limit() -> None:
    pattern = parse_regex_key(TRAP.format(0))
    assert pattern is not None
    assert pattern.test(LONG) is False
    assert REGEX_TIMEOUT == 0.05
