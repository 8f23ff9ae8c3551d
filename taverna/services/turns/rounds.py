"""A group round: the members who answer one message, generating one after another."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from taverna.services.turns.runs import RunningGeneration

__all__ = ["GroupRound"]


@dataclass(eq=False)
class GroupRound:
    """The speakers of a round and the generation of each who has started.

    A speaker starts when the one before has been saved; a stopped or failed
    generation ends the round, as does `stopped`.
    """

    id: str
    chat_id: str
    speakers: tuple[str, ...]
    runs: list[RunningGeneration] = field(default_factory=list)
    done: bool = False
    stopped: bool = False
    task: asyncio.Task[None] | None = None
    started: Callable[[RunningGeneration], object] | None = None  # told of each start
    # told of every change (a start, the end): what shares rounds between processes
    changed: Callable[[GroupRound], object] | None = None

    def add(self, run: RunningGeneration) -> None:
        """A speaker's generation has started."""
        self.runs.append(run)
        if self.started is not None:
            self.started(run)
        if self.changed is not None:
            self.changed(self)

    def finish(self) -> None:
        """The round has ended (its last speaker done, stopped, or nobody to answer)."""
        self.done = True
        if self.changed is not None:
            self.changed(self)

    @property
    def current(self) -> RunningGeneration | None:
        """The generation running now (or the last one)."""
        return self.runs[-1] if self.runs else None
