"""Generations in flight: their events, kept so a page can follow or re-attach, the group
rounds that run them one after another, and the registry of a process's generations."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from taverna.engine.assembly.context import GenerationType
from taverna.errors import NotFound
from taverna.providers.events import (
    Event,
    ReasoningDelta,
    TextDelta,
)
from taverna.services.kept_bytes import KeptBytes, approx_bytes, text_bytes

if TYPE_CHECKING:
    from taverna.model.prompt import Prompt

# ------------------------------------------------------------------ events


@dataclass(frozen=True, slots=True)
class Started:
    """The generation began: which, where, and what it extends or replaces."""

    generation_id: str
    chat_id: str
    kind: GenerationType
    anchor_id: str | None


@dataclass(frozen=True, slots=True)
class Queued:
    """The generation waits for its prompt to be built: `ahead` builds go before it."""

    ahead: int


@dataclass(frozen=True, slots=True)
class Posted:
    """The person's message a send posts is stored (the chat is at `revision` with it)."""

    node_id: str
    revision: int


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool the model called has answered."""

    call_id: str
    name: str
    result: str


class Ending(StrEnum):
    """How a generation ended."""

    SAVED = "saved"
    # Finished, but the database could not take it: it waits in the journal (on local
    # disk) and is stored as soon as the database answers again.
    SAVING = "saving"
    IMPERSONATED = "impersonated"
    FAILED = "failed"
    STOPPED = "stopped"


@dataclass(frozen=True, slots=True)
class Completed:
    """The last event: saved (node, revision), or failed/stopped with a draft of what streamed."""

    outcome: Ending
    text: str
    node_id: str | None = None
    revision: int | None = None
    draft_id: str | None = None
    error: str | None = None
    # Why the model API failed, when it did (ErrorKind's value: "auth", "timeout", ...),
    # so the page can say it in the person's language.
    cause: str | None = None


GenerationEvent = Event | Queued | Started | Posted | ToolResult | Completed


@dataclass(frozen=True, slots=True)
class Draft:
    """Text a failed, stopped or impersonated generation left, waiting to be kept or dropped."""

    id: str
    chat_id: str
    kind: GenerationType
    anchor_id: str | None
    text: str
    reason: str
    revision: int
    stripped: bool = False
    # The model API's failure kind when the API failed (a page says it in its language).
    cause: str | None = None


# ------------------------------------------------------------- the registry


class RunningGeneration:
    """One generation in flight (or recently finished) and every event it has produced."""

    # Run by another process (followed through the registry's broker).
    remote = False

    def __init__(self, generation_id: str, chat_id: str, kind: GenerationType) -> None:
        self.id = generation_id
        self.chat_id = chat_id
        self.kind = kind
        self.events: list[GenerationEvent] = []
        self.done = False
        self.finished_at: float | None = None
        self.task: asyncio.Task[Completed] | None = None
        # The request (URL and body) of each round as sent, for the record of the reply.
        self.requests: list[tuple[str, Mapping[str, Any]]] = []
        # The message under which the chat changes with this generation (None: from the
        # first message): what a page redraws once it starts.
        self.changed_below: str | None = None
        # What another process needs to keep this run's text as a draft, should this
        # process die while it streams (the message it answers, the account, ...).
        self.draft_info: dict[str, Any] = {}
        # While it waits for its prompt to be built: how many builds go before it.
        self.queued: int | None = None
        # In the registry (a run that waited was put there when it began to wait).
        self.listed = False
        # Told of each event as it is published (a registry shared by processes copies
        # the run's new events to the others).
        self.on_publish: Callable[[RunningGeneration], None] | None = None
        self._signal = asyncio.Event()

    def publish(self, event: GenerationEvent) -> None:
        self.events.append(event)
        if isinstance(event, Completed):
            self.done = True
            self.finished_at = time.monotonic()
        signal, self._signal = self._signal, asyncio.Event()
        signal.set()
        if self.on_publish is not None:
            self.on_publish(self)

    @property
    def result(self) -> Completed | None:
        last = self.events[-1] if self.events else None
        return last if isinstance(last, Completed) else None

    @property
    def text(self) -> str:
        """The reply text streamed so far."""
        return "".join(e.text for e in self.events if isinstance(e, TextDelta))

    async def follow(self, since: int = 0) -> AsyncIterator[tuple[int, GenerationEvent]]:
        """Every event from index `since` on: first those already there, then live ones."""
        index = max(0, since)
        while True:
            signal = self._signal
            while index < len(self.events):
                yield index, self.events[index]
                index += 1
            if self.done:
                return
            await signal.wait()

    async def batches(self, since: int = 0) -> AsyncIterator[list[tuple[int, GenerationEvent]]]:
        """The events from index `since` on, each with its index, in lists of what is
        there at once (a follower sends them together)."""
        index = max(0, since)
        while True:
            signal = self._signal
            end = len(self.events)
            if index < end:
                batch = list(zip(range(index, end), self.events[index:end], strict=True))
                index = end
                yield batch
                continue
            if self.done:
                return
            await signal.wait()

    async def wait(self) -> Completed:
        """The final event, once the generation has ended."""
        async for _, event in self.follow(len(self.events) - 1 if self.done else 0):
            if isinstance(event, Completed):
                return event
        result = self.result
        assert result is not None
        return result


# The bytes of finished runs kept for re-attaching at most, whatever their age: a busy
# server finishes thousands in `keep_finished` seconds, each holding its events and the
# requests it sent.
FINISHED_BYTES = 16 << 20
# What an event holds besides its text.
EVENT_OVERHEAD = 96


def run_bytes(run: RunningGeneration) -> int:
    """About what a run holds: its events (their texts) and the requests it sent."""
    texts = [e.text for e in run.events if isinstance(e, TextDelta | ReasoningDelta)]
    done = run.result
    if done is not None:
        texts.append(done.text)
    return (
        text_bytes(texts)
        + EVENT_OVERHEAD * len(run.events)
        + approx_bytes(run.requests, 6)
        + approx_bytes(run.draft_info, 2)
    )


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


class GenerationRegistry:
    """Generations of this process by id; finished ones stay `keep_finished` seconds, the
    newest `finished_bytes` of them at most (running ones always stay)."""

    def __init__(
        self, keep_finished: float = 600.0, *, finished_bytes: int = FINISHED_BYTES
    ) -> None:
        self.keep_finished = keep_finished
        self.finished_bytes = finished_bytes
        self._runs: dict[str, RunningGeneration] = {}
        # the bytes of each finished run, measured once it has finished
        self._sizes: dict[str, int] = {}

    def add(self, run: RunningGeneration) -> None:
        self._prune()
        self._runs[run.id] = run

    def get(self, generation_id: str) -> RunningGeneration:
        run = self._runs.get(generation_id)
        if run is None:
            raise NotFound(
                "no such generation (it may have finished long ago)",
                code="no_such_generation_expired",
            )
        return run

    def for_chat(self, chat_id: str, *, running_only: bool = False) -> list[RunningGeneration]:
        """A chat's generations, oldest first (running ones only if asked)."""
        # a copy first: routes on worker threads ask while the event loop adds runs
        return [
            r
            for r in list(self._runs.values())
            if r.chat_id == chat_id and not (running_only and r.done)
        ]

    def bind(
        self,
        *,
        stop: Callable[[str], Awaitable[object]],
        orphan: Callable[[Mapping[str, str], str], str | None],
        stop_round: Callable[[str], Awaitable[object]] | None = None,
    ) -> None:
        """What a registry shared by processes calls back: `stop` one of this process's
        runs (`stop_round`: one of its group rounds), keep an `orphan`'s text as a draft
        (its meta, its text: the draft's id). Unused in one process."""

    async def stop_elsewhere(self, run: RunningGeneration) -> Completed | None:
        """Stop a run of another process (none, in one process)."""
        raise NotFound("no such generation in this process", code="no_such_generation_here")

    def round_changed(self, found: GroupRound) -> None:
        """A group round of this process started a speaker or ended (shared, if shared)."""

    def round(self, round_id: str) -> GroupRound | None:
        """A group round of another process, as last shared (None in one process)."""
        return None

    async def stop_round_elsewhere(self, round_id: str) -> None:
        """Ask the process running a group round to stop it (none, in one process)."""
        raise NotFound("no such round", code="no_such_round")

    async def open(self) -> None:
        """Start what the registry runs in the background (nothing, in one process)."""

    async def close(self) -> None:
        """Stop what `open` started."""

    @property
    def kept(self) -> int:
        """How many runs this process keeps, running and finished."""
        return len(self._runs)

    @property
    def finished_held(self) -> int:
        """The bytes of the finished runs kept (as of the last start)."""
        return sum(self._sizes.values())

    def _prune(self) -> None:
        now = time.monotonic()
        finished: list[tuple[float, str]] = []
        for key, run in list(self._runs.items()):
            if run.finished_at is None:
                continue
            if now - run.finished_at > self.keep_finished:
                self._let_go(key)
            else:
                finished.append((run.finished_at, key))
                if key not in self._sizes:
                    self._sizes[key] = run_bytes(run)
        held = sum(self._sizes[key] for _, key in finished)
        finished.sort()
        for _, key in finished:
            if held <= self.finished_bytes:
                break
            held -= self._sizes[key]
            self._let_go(key)

    def _let_go(self, key: str) -> None:
        del self._runs[key]
        self._sizes.pop(key, None)


# The bytes of the last prompts sent kept, one a chat.
PROMPTS_BYTES = 16 << 20
# What a prompt's message and ledger line hold besides their texts.
PROMPT_PART_OVERHEAD = 200


def prompt_bytes(_chat_id: str, prompt: Prompt) -> int:
    """About what a prompt holds: its texts, and its messages' and ledger lines' fields."""
    texts = [prompt.text, prompt.prefill, *(m.content for m in prompt.messages)]
    texts += [item.text for item in prompt.ledger.items]
    parts = len(prompt.messages) + len(prompt.ledger.items) + len(prompt.ledger.trace)
    return text_bytes(texts) + PROMPT_PART_OVERHEAD * parts


class RecentPrompts(KeptBytes[str, "Prompt"]):
    """Each chat's last prompt sent, for the chats that generated most recently, up to
    `budget` bytes: a server that has answered thousands of chats keeps a whole prompt
    for these only."""

    def __init__(self, budget: int = PROMPTS_BYTES) -> None:
        super().__init__(budget, prompt_bytes)
