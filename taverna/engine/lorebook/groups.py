"""Inclusion groups: at most one member of a group activates per scan (algo-world-info.md §6).

The filter works on the entries a scan pass just found, before probability rolls. It
reproduces SillyTavern 1.12.6 exactly, including two JavaScript artefacts that change
results: group names are visited in JavaScript object-key order (integer-like names
first, ascending), and removing an entry that is already gone removes the *last* entry
of the list instead (`splice(-1, 1)`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from taverna.model.lorebook import Reason

__all__ = ["GroupMember", "GroupRemoval", "filter_groups", "js_key_order"]

T = TypeVar("T", bound=Hashable)


@dataclass(frozen=True, slots=True)
class GroupMember(Generic[T]):
    """What the filter needs to know about one candidate entry."""

    ref: T
    group_field: str  # the raw `group` text
    groups: tuple[str, ...]
    order: float
    override: bool
    weight: float
    use_scoring: bool | None
    sticky: bool
    cooldown: bool
    delayed: bool


@dataclass(frozen=True, slots=True)
class GroupRemoval(Generic[T]):
    """Why an entry left the candidate list."""

    ref: T
    group: str
    reason: Reason


def js_key_order(names: Sequence[str]) -> list[str]:
    """JavaScript's own-key order for an object built by inserting `names`."""

    def is_index(name: str) -> bool:
        return (
            name.isdigit() and (name == "0" or not name.startswith("0")) and int(name) < 2**32 - 1
        )

    unique = list(dict.fromkeys(names))
    indices = sorted((n for n in unique if is_index(n)), key=int)
    return indices + [n for n in unique if not is_index(n)]


def filter_groups(
    members: list[GroupMember[T]],
    *,
    earlier_group_fields: Sequence[str],
    scoring: bool,
    score: Callable[[T], int],
    random: Callable[[], float],
) -> tuple[list[GroupMember[T]], list[GroupRemoval[T]]]:
    """The candidates left after the group rules, and what was removed and why.

    `members` is the pass's candidate list in order; `earlier_group_fields` are the raw
    `group` texts of entries activated in earlier passes; `random` draws in [0, 1).
    """
    grouped: dict[str, list[GroupMember[T]]] = {}
    for member in members:
        for name in member.groups:
            grouped.setdefault(name, []).append(member)
    if not grouped:
        return list(members), []
    order = js_key_order(list(grouped))
    pruning = _Pruning(members)
    has_sticky = _timer_rules(grouped, order, pruning)
    _scoring_rules(grouped, order, has_sticky, pruning, scoring, score)
    earlier = set(earlier_group_fields)
    for name in order:
        if has_sticky[name]:
            continue
        group = grouped[name]
        if name in earlier:
            for member in group:
                pruning.remove(member, name, Reason("group_earlier", {"group": name}))
            continue
        if len(group) <= 1:
            continue
        winner, reason = _winner(group, name, random)
        if reason is None:
            continue
        for member in group:
            if member is not winner:
                pruning.remove(member, name, reason)
    return pruning.remaining, pruning.removed


class _Pruning(Generic[T]):
    """The candidate list as the rules remove from it, and the removals in order."""

    __slots__ = ("remaining", "removed")

    def __init__(self, members: list[GroupMember[T]]) -> None:
        self.remaining = list(members)
        self.removed: list[GroupRemoval[T]] = []

    def remove(self, member: GroupMember[T], group: str, reason: Reason) -> None:
        remaining = self.remaining
        if member in remaining:
            remaining.remove(member)
            self.removed.append(GroupRemoval(member.ref, group, reason))
        elif remaining:
            # algo-world-info.md §6 known bug: indexOf gives -1, splice(-1, 1) drops the last
            victim = remaining.pop()
            self.removed.append(GroupRemoval(victim.ref, group, Reason("group_quirk")))


def _timer_rules(
    grouped: dict[str, list[GroupMember[T]]], order: list[str], pruning: _Pruning[T]
) -> dict[str, bool]:
    """§6.1: a sticky member keeps its group to the sticky ones; cooldown and delay remove.

    Returns, per group, whether it has a sticky member (the later rules then skip it).
    """
    has_sticky: dict[str, bool] = {}
    for name in order:
        group = grouped[name]
        has_sticky[name] = False
        if any(m.sticky for m in group):
            for member in group:
                if not member.sticky:
                    pruning.remove(member, name, Reason("group_sticky", {"group": name}))
            has_sticky[name] = True
        for member in [m for m in group if m.cooldown]:
            pruning.remove(member, name, Reason("group_cooldown", {"group": name}))
        for member in [m for m in group if m.delayed]:
            pruning.remove(member, name, Reason("group_delay", {"group": name}))
    return has_sticky


def _scoring_rules(
    grouped: dict[str, list[GroupMember[T]]],
    order: list[str],
    has_sticky: dict[str, bool],
    pruning: _Pruning[T],
    scoring: bool,
    score: Callable[[T], int],
) -> None:
    """§6.3: with group scoring, members scoring below their group's best leave it."""
    for name in order:
        group = grouped[name]
        if not scoring and not any(m.use_scoring for m in group):
            continue
        if has_sticky[name]:
            continue
        scores = [score(m.ref) for m in group]
        best = max(scores)
        i = 0
        while i < len(group):
            member = group[i]
            scored = member.use_scoring if member.use_scoring is not None else scoring
            if scored and scores[i] < best:
                pruning.remove(
                    member,
                    name,
                    Reason("group_score", {"score": scores[i], "best": best, "group": name}),
                )
                del group[i]
                del scores[i]
                continue
            i += 1


def _winner(
    group: list[GroupMember[T]], name: str, random: Callable[[], float]
) -> tuple[GroupMember[T] | None, Reason | None]:
    """§6.4: the prioritized member of highest order, else a draw by weight; None: no one."""
    prioritized = sorted((m for m in group if m.override), key=lambda m: -m.order)
    if prioritized:
        return prioritized[0], Reason("group_prioritized", {"group": name})
    total = sum(m.weight for m in group)
    roll = random() * total
    cumulative = 0.0
    for member in group:
        cumulative += member.weight
        if roll <= cumulative:
            drawn = {"group": name, "roll": f"{roll:.2f}", "total": f"{total:g}"}
            return member, Reason("group_draw", drawn)
    return None, None
