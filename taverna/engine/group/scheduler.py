"""Who speaks next in a group chat (algo-chat-ops.md §5.2), as a pure function.

The talkativeness rolls and the random picks draw from a generator seeded by the chat
and the position on its path (`round_seed`), so a replay of the same turn draws the
same speakers in the same order, and a test can say which.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from enum import IntEnum

from taverna.engine.group.mentions import mentioned

__all__ = ["ActivationStrategy", "GroupTurn", "Member", "next_speakers", "round_seed"]

DEFAULT_TALKATIVENESS = 0.5


class ActivationStrategy(IntEnum):
    """SillyTavern's `activation_strategy` values."""

    NATURAL = 0
    LIST = 1
    MANUAL = 2
    POOLED = 3

    @classmethod
    def parse(cls, value: object) -> ActivationStrategy:
        """The strategy a group file names; anything unknown is natural order."""
        try:
            return cls(int(value))  # type: ignore[call-overload]
        except (TypeError, ValueError):
            return cls.NATURAL


@dataclass(frozen=True, slots=True)
class Member:
    """A group member as the scheduler sees it."""

    name: str
    talkativeness: float = DEFAULT_TALKATIVENESS
    muted: bool = False


@dataclass(frozen=True, slots=True)
class GroupTurn:
    """What decides a round's speakers.

    `last_text` and `last_speaker` are the newest message's text and author (the
    author is None for the person's own message or an empty chat); `user_input` is true
    when the person has just written (an auto-mode round is not user input);
    `spoken` names the characters who spoke, oldest first, far enough back to cover the
    current pooled cycle (every member's turns since the last of them spoke twice). `seed`: see `round_seed`.
    """

    members: tuple[Member, ...]
    strategy: ActivationStrategy = ActivationStrategy.NATURAL
    allow_self_responses: bool = False
    last_text: str = ""
    last_speaker: str | None = None
    user_input: bool = True
    spoken: tuple[str, ...] = ()
    seed: int = 0


def round_seed(chat_id: str, position: int) -> int:
    """The seed of the round after message `position` of chat `chat_id`."""
    digest = hashlib.sha256(f"{chat_id}\x00{position}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def next_speakers(turn: GroupTurn) -> tuple[str, ...]:
    """The members who speak this round, in order (empty: nobody answers)."""
    active = [m for m in turn.members if not m.muted and m.name]
    if not active:
        return ()
    rng = random.Random(turn.seed)
    if turn.strategy is ActivationStrategy.LIST:
        return tuple(m.name for m in active)
    if turn.strategy is ActivationStrategy.MANUAL:
        # the person picks; a round nobody typed for (auto mode) takes one at random
        return () if turn.user_input else (rng.choice(active).name,)
    if turn.strategy is ActivationStrategy.POOLED:
        return (_pooled(turn, active, rng),)
    return _natural(turn, active, rng)


def _banned(turn: GroupTurn) -> str | None:
    """The member who may not answer itself: the last speaker, unless allowed."""
    if turn.user_input or turn.allow_self_responses:
        return None
    return turn.last_speaker


def _talkativeness(member: Member) -> float:
    value = member.talkativeness
    return DEFAULT_TALKATIVENESS if value != value else value  # NaN: the default


def _natural(turn: GroupTurn, active: list[Member], rng: random.Random) -> tuple[str, ...]:
    banned = _banned(turn)
    eligible = [m for m in active if m.name != banned]
    order = mentioned(turn.last_text, [m.name for m in eligible])
    shuffled = list(eligible)
    rng.shuffle(shuffled)
    chatty = [m for m in shuffled if _talkativeness(m) > 0]
    for member in shuffled:
        if _talkativeness(member) >= rng.random():
            order.append(member.name)
    if not order:
        # algo-chat-ops.md §5.2 step 4: at least one speaker, from the chatty ones
        # (SillyTavern's fallback of every member may pick the banned one; not here)
        pool = chatty or eligible or active
        order.append(rng.choice(pool).name)
    return tuple(dict.fromkeys(order))


def _pooled(turn: GroupTurn, active: list[Member], rng: random.Random) -> str:
    """One speaker from those who have not spoken in the current cycle.

    SillyTavern's pool empties at each message of the person's; here a cycle ends only
    when every active member has spoken, so nobody speaks twice before all spoke once.
    """
    names = {m.name for m in active}
    cycle: set[str] = set()
    for name in turn.spoken:
        if name in names:
            cycle.add(name)
            if cycle == names:
                cycle = set()
    waiting = [m for m in active if m.name not in cycle]
    if len(waiting) > 1 and turn.last_speaker in {m.name for m in waiting}:
        # a fresh cycle does not start with the one who ended the last
        waiting = [m for m in waiting if m.name != turn.last_speaker]
    return rng.choice(waiting).name
