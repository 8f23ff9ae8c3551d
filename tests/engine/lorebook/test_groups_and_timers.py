"""Inclusion groups (algo-world-info.md §6) and sticky/cooldown/delay timers (§7)."""

from __future__ import annotations

from pathlib import Path

from taverna.engine.lorebook.groups import GroupMember, filter_groups, js_key_order
from taverna.formats.world_info import read_world_info
from taverna.model.lorebook import TimedEffect, TimedEffects, WorldInfoSettings

from .helpers import chat, entry, outcome, run, uids


def member(ref: str, *groups: str, **fields: object) -> GroupMember[str]:
    values: dict[str, object] = {
        "group_field": ",".join(groups),
        "groups": groups,
        "order": 100.0,
        "override": False,
        "weight": 100.0,
        "use_scoring": None,
        "sticky": False,
        "cooldown": False,
        "delayed": False,
    }
    values.update(fields)
    return GroupMember(ref=ref, **values)  # type: ignore[arg-type]


def test_weighted_draw_worked_example() -> None:
    """§6 worked example: weights 100 and 300, roll 0.3 * 400 = 120 -> B wins."""
    kept, removed = filter_groups(
        [member("A", "weather"), member("B", "weather", weight=300.0)],
        earlier_group_fields=[],
        scoring=False,
        score=lambda ref: 0,
        random=lambda: 0.3,
    )
    assert [m.ref for m in kept] == ["B"]
    assert [(r.ref, r.group) for r in removed] == [("A", "weather")]


def test_override_wins_by_highest_order() -> None:
    """§6.4: prioritized members: the highest `order` wins without a roll."""
    kept, _ = filter_groups(
        [
            member("low", "g", override=True, order=10.0),
            member("high", "g", override=True, order=90.0),
            member("plain", "g", order=500.0),
        ],
        earlier_group_fields=[],
        scoring=False,
        score=lambda ref: 0,
        random=lambda: 0.99,
    )
    assert [m.ref for m in kept] == ["high"]


def test_sticky_members_win_and_cooldown_members_leave() -> None:
    """§6.2: sticky members stay (all of them), others go; cooldown members are removed."""
    kept, _ = filter_groups(
        [member("s1", "g", sticky=True), member("n", "g"), member("s2", "g", sticky=True)],
        earlier_group_fields=[],
        scoring=False,
        score=lambda ref: 0,
        random=lambda: 0.0,
    )
    assert [m.ref for m in kept] == ["s1", "s2"]


def test_scoring_keeps_the_best_matches() -> None:
    """§6.3: members scoring below the group's best are removed before the draw."""
    scores = {"a": 1, "b": 3, "c": 3}
    kept, _ = filter_groups(
        [member("a", "g"), member("b", "g"), member("c", "g")],
        earlier_group_fields=[],
        scoring=True,
        score=lambda ref: scores[ref],
        random=lambda: 0.0,
    )
    assert [m.ref for m in kept] == ["b"]


def test_group_activated_in_an_earlier_pass_blocks_by_exact_name() -> None:
    """§6.4: an earlier winner whose `group` equals the name blocks; "a,b" does not block a."""
    blocked, _ = filter_groups(
        [member("x", "a")],
        earlier_group_fields=["a"],
        scoring=False,
        score=lambda ref: 0,
        random=lambda: 0.0,
    )
    assert blocked == []
    open_, _ = filter_groups(
        [member("x", "a")],
        earlier_group_fields=["a,b"],
        scoring=False,
        score=lambda ref: 0,
        random=lambda: 0.0,
    )
    assert [m.ref for m in open_] == ["x"]


def test_splice_minus_one_quirk() -> None:
    """§6 known bug: removing an entry already gone removes the last entry instead."""
    kept, removed = filter_groups(
        [
            member("both", "g1", "g2"),
            member("w1", "g1", override=True),
            member("w2", "g2", override=True),
            member("bystander"),
        ],
        earlier_group_fields=[],
        scoring=False,
        score=lambda ref: 0,
        random=lambda: 0.0,
    )
    assert [m.ref for m in kept] == ["w1", "w2"]
    assert "bystander" in [r.ref for r in removed]


def test_group_names_follow_javascript_key_order() -> None:
    assert js_key_order(["b", "10", "a", "2", "01"]) == ["2", "10", "b", "a", "01"]


def test_groups_in_a_scan_and_the_trace() -> None:
    """§6: only one member of a group fires; the loser's trace says so."""
    entries = [
        entry(0, "storm", group="weather", group_override=True),
        entry(1, "rain", group="weather"),
    ]
    result = run(entries, "storm and rain")
    assert uids(result) == [0]
    assert outcome(result, 1) == "inclusion group"


def test_group_winner_can_still_fail_probability() -> None:
    """§6.5: the winner may fail its roll afterwards; the group yields nothing."""
    entries = [
        entry(0, "storm", group="w", group_override=True, probability=0),
        entry(1, "rain", group="w"),
    ]
    assert uids(run(entries, "storm rain")) == []


def test_timeline_example() -> None:
    """§7.4: sticky 3, cooldown 2; each turn adds two messages."""
    lore = [entry(0, "moon", sticky=3, cooldown=2)]

    def turn(length: int, text: str, timers: TimedEffects) -> tuple[list[int], TimedEffects]:
        messages = chat(*(["..."] * (length - 1)), text)
        result = run(lore, messages, timers=timers)
        return uids(result), result.timers

    active, timers = turn(4, "the moon rises", TimedEffects())
    assert active == [0]
    assert timers.sticky["Lore.0"].start == 4 and timers.sticky["Lore.0"].end == 7
    assert timers.cooldown["Lore.0"].end == 6
    active, timers = turn(6, "no keyword", timers)
    assert active == [0]  # sticky keeps it active; the ended cooldown is re-recorded
    assert (timers.cooldown["Lore.0"].start, timers.cooldown["Lore.0"].end) == (6, 8)
    active, timers = turn(8, "the moon again", timers)
    assert active == []  # sticky ended -> protected cooldown, suppressed at once
    assert "Lore.0" not in timers.sticky
    assert timers.cooldown["Lore.0"] == TimedEffect(
        hash=timers.cooldown["Lore.0"].hash, start=8, end=10, protected=True
    )
    active, timers = turn(10, "the moon again", timers)
    assert active == [0]


def test_swipe_at_same_clock_drops_unprotected_records() -> None:
    """§7.1 step 1: the chat did not advance -> unprotected records are deleted."""
    lore = [entry(0, "moon", sticky=3)]
    first = run(lore, chat("a", "b", "c", "moon"))
    again = run(lore, chat("a", "b", "c", "no keyword"), timers=first.timers)
    assert uids(again) == []
    assert again.timers.sticky == {}


def test_delay_and_dry_run() -> None:
    """§7.1: `delay` suppresses while the chat is shorter; dry runs ignore all timers."""
    lore = [entry(0, "moon", delay=3)]
    assert uids(run(lore, chat("moon"))) == []
    assert uids(run(lore, chat("a", "b", "moon"))) == [0]
    assert uids(run(lore, chat("moon"), dry_run=True)) == [0]
    sticky = [entry(0, "moon", sticky=5)]
    first = run(sticky, chat("a", "moon"))
    dry = run(sticky, chat("a", "b", "c"), timers=first.timers, dry_run=True)
    assert uids(dry) == [] and dry.timers == first.timers


def test_sillytavern_timer_records_are_recognised(st_fixtures: Path) -> None:
    """§6 of the format spec: records match entries by content hash (verified values)."""
    path = st_fixtures / "handmade" / "user-data" / "worlds" / "Glade Lore.json"
    lore = read_world_info(path.read_bytes(), name="Glade Lore", file=str(path))
    timers = TimedEffects(
        sticky={"Glade Lore.0": TimedEffect(5113753434772146, 5, 7)},
        cooldown={"Glade Lore.1": TimedEffect(8822432912246341, 5, 7, protected=True)},
    )
    messages = chat("a", "b", "c", "d", "e", "nothing relevant")
    result = run(lore, messages, timers=timers, settings=WorldInfoSettings())
    assert 0 in uids(result)  # sticky without a keyword
    assert outcome(result, 1, "Glade Lore") in ("cooldown", "no match")
    edited = [e.changed(content=e.content + "!") if e.uid == 0 else e for e in lore.entries]
    from dataclasses import replace

    changed = replace(lore, entries=tuple(edited))
    orphaned = run(changed, messages, timers=timers)
    assert 0 not in uids(orphaned)  # an edit changes the hash: the record applies to nothing
    assert "Glade Lore.0" in orphaned.timers.sticky  # kept until it ends


def test_timed_effects_json_round_trip() -> None:
    """formats-world-info.md §6: `timedWorldInfo` as stored; non-object records dropped."""
    stored = {
        "sticky": {
            "Glade Lore.0": {"hash": 5113753434772146, "start": 5, "end": 7, "protected": False}
        },
        "cooldown": {
            "Glade Lore.1": {"hash": 1, "start": 5, "end": 7, "protected": True},
            "bad": 3,
        },
    }
    timers = TimedEffects.from_json(stored)
    assert timers.sticky["Glade Lore.0"].end == 7
    assert "bad" not in timers.cooldown
    del stored["cooldown"]["bad"]
    assert timers.to_json() == stored
    assert TimedEffects.from_json(None) == TimedEffects()


def test_group_scoring_in_a_scan() -> None:
    """§6.3: with scoring, the member matching more keys wins; AND ANY adds secondaries."""
    entries = [
        entry(0, "storm", group="w", use_group_scoring=True),
        entry(1, "storm", "rain", group="w", use_group_scoring=True),
        entry(2, "storm", keysecondary=("rain", "wind"), group="w", use_group_scoring=True),
    ]
    # scores: 0 -> 1; 1 -> 2; 2 -> 1 primary + 2 secondary (AND ANY) = 3
    result = run(entries, "storm, rain and wind")
    assert uids(result) == [2]
    assert outcome(result, 0) == "inclusion group" and outcome(result, 1) == "inclusion group"
    unscored = [entries[0], entries[1].changed(use_group_scoring=False)]
    # entry 1 is not scored itself; entry 0 (score 1) loses to the max score 2 of entry 1
    assert uids(run(unscored, "storm rain", seed=3)) == [1]
