"""The queue generations wait in for their prompt to be built, fair between accounts.

A process builds one prompt at a time (on one thread: the builds share the token-count
cache). When starts come faster than builds, they wait here. Plain arrival order would let
one account's 50 tabs, sent at once, hold every other account's turn for 50 builds; so
each account takes turns (start-time fair queueing with one unit per build): an account's
n-th waiting build is tagged n builds after the build running when it came, and builds go
in the order of their tags, the one that came first among equal tags. One account alone
is served in arrival order; two accounts alternate; a newcomer waits for about one build
per account waiting, however many builds another account has queued.

A waiting start is told its place (how many builds go before it) when it comes and each
time the place changes, so the page can say "queued" rather than spin in silence.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")

# Told a waiting build's place: how many builds go before it, those running included.
Told = Callable[[int], object]


@dataclass(order=True)
class _Waiting:
    tag: int
    seq: int
    turn: asyncio.Future[None] = field(compare=False)
    told: Told | None = field(compare=False)
    place: int = field(default=-1, compare=False)


class BuildQueue:
    """Runs work on `executor`, `slots` at a time, the waiting work fair between accounts."""

    def __init__(self, executor: Executor, *, slots: int = 1) -> None:
        self.executor = executor
        self.slots = slots
        self.busy = 0
        self._waiting: list[_Waiting] = []
        self._seq = itertools.count()
        self._virtual = 0  # the tag of the build last begun
        self._next_tag: dict[str, int] = {}  # each account's next build's tag, at least

    @property
    def waiting(self) -> int:
        """How many builds wait."""
        return len(self._waiting)

    def tag(self, account: str) -> int:
        """The tag a build of `account` coming now takes (see the module doc)."""
        return max(self._virtual, self._next_tag.get(account, 0))

    async def run(self, account: str, work: Callable[[], T], *, told: Told | None = None) -> T:
        """Run `work` on the executor once its turn comes; `told` hears its place while
        it waits (not at all when it need not wait)."""
        tag = self.tag(account)
        self._next_tag[account] = tag + 1
        if self.busy < self.slots and not self._waiting:
            self._begin(tag)
        else:
            await self._wait(tag, told)
        try:
            return await asyncio.get_running_loop().run_in_executor(self.executor, work)
        finally:
            self.busy -= 1
            self._give_turn()

    def _begin(self, tag: int) -> None:
        self.busy += 1
        self._virtual = max(self._virtual, tag)
        if len(self._next_tag) > 64:
            # an account whose tag the queue has passed is as good as a new one
            self._next_tag = {a: t for a, t in self._next_tag.items() if t > self._virtual}

    async def _wait(self, tag: int, told: Told | None) -> None:
        waiting = _Waiting(tag, next(self._seq), asyncio.get_running_loop().create_future(), told)
        heapq.heappush(self._waiting, waiting)
        self._tell_places()
        try:
            await waiting.turn
        except asyncio.CancelledError:
            if waiting.turn.done() and not waiting.turn.cancelled():
                # its turn was given as it was cancelled: the next one takes it
                self.busy -= 1
                self._give_turn()
            elif waiting in self._waiting:
                self._waiting.remove(waiting)
                heapq.heapify(self._waiting)
                self._tell_places()
            raise

    def _give_turn(self) -> None:
        while self._waiting and self.busy < self.slots:
            waiting = heapq.heappop(self._waiting)
            if waiting.turn.done():  # cancelled meanwhile
                continue
            self._begin(waiting.tag)
            waiting.turn.set_result(None)
        self._tell_places()

    def _tell_places(self) -> None:
        for place, waiting in enumerate(sorted(self._waiting), start=self.busy):
            if waiting.place != place:
                waiting.place = place
                if waiting.told is not None:
                    waiting.told(place)
