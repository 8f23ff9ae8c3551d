"""One reader, per process, of the event streams of every run followed in it.

A follower of another process's run used to wait on a blocking XREAD of its own: one
Redis command (and one pooled connection held) per follower per batch. The hub reads
every followed run's stream with one multi-key `XREAD BLOCK` and hands each follower
the events of its run (decoded once, however many follow it); each follower keeps its
own place, so several follow one run from different indices.

A follower *joins* before it reads what is already there itself (one non-blocking
XREAD): the hub hands it everything from the index the hub reads its run at, so what
it read itself and what it is handed leave no gap (and it drops what it already has).
A run new to the hub interrupts the hub's read in progress by an entry added to the
hub's own wake-up stream, which every read of the hub includes, so a follower never
waits for that read's time-out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Callable
from typing import cast

import redis
import redis.asyncio as aredis
from redis.typing import KeyT, StreamIdT

from taverna.services.turns.event_codec import decode
from taverna.services.turns.runs import GenerationEvent

logger = logging.getLogger(__name__)

Batch = list[tuple[int, GenerationEvent]]
# The wake-up stream keeps its last entries only, and goes when the process is gone.
WAKE_KEPT = 8
WAKE_EXPIRE_S = 60


def position(entry_id: str) -> int:
    """The index of the event stored under a stream entry id (event `i` is `0-{i+1}`)."""
    return int(entry_id.rpartition("-")[2]) - 1


def raise_if_cancelled() -> None:
    """Raise the cancellation of the current task if an await swallowed it: redis-py's
    async client can return normally from a command cancelled as its answer arrives, and
    a loop around it would then never end."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


class Place:
    """One follower's place in the hub: the batches handed to it and not yet taken."""

    __slots__ = ("__weakref__", "_arrived", "_batches", "key")

    def __init__(self, key: str) -> None:
        self.key = key
        self._batches: list[Batch] = []
        self._arrived = asyncio.Event()

    def hand(self, batch: Batch) -> None:
        self._batches.append(batch)
        self._arrived.set()

    def wake(self) -> None:
        self._arrived.set()

    async def take(self, timeout: float) -> Batch:
        """What was handed since the last take, in order; empty after `timeout` seconds
        with nothing (or when woken by the hub closing)."""
        if not self._batches:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._arrived.wait()
        self._arrived.clear()
        batches, self._batches = self._batches, []
        if len(batches) == 1:
            return batches[0]
        return [found for batch in batches for found in batch]


class _Stream:
    """A followed run's stream: the index the hub reads it from, and who follows it."""

    __slots__ = ("followers", "next")

    def __init__(self, start: int) -> None:
        self.next = start
        # Held weakly: a follower whose generator was dropped without being closed
        # leaves no reference behind in the hub.
        self.followers: weakref.WeakSet[Place] = weakref.WeakSet()


class FollowHub:
    """Reads the event streams of every run followed in this process, in one command."""

    def __init__(
        self,
        client: Callable[[], aredis.Redis],
        wake_key: str,
        *,
        block_ms: int,
        count: int,
        retry: float,
        gather: float = 0.0,
    ) -> None:
        self._client = client
        self.wake_key = wake_key
        self.block_ms = block_ms
        self.count = count
        self.retry = retry
        # After a read that found events, the pause before the next (see `_read`).
        self.gather = gather
        self._streams: dict[str, _Stream] = {}
        self._woken_at = "0-0"
        self._reading = False  # a blocking read is under way
        self._wake_sent = False  # and a wake-up was sent since it began
        self._joined = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.closed = False
        # The last read's failure, if it failed: each follower gives up on it as on a
        # failure of its own.
        self.failure: Exception | None = None

    def failed(self) -> redis.RedisError | None:
        """The hub's last read's failure as a fresh error for a follower to raise (the
        same one raised by many would gather all their tracebacks), None if it read."""
        failure = self.failure
        if failure is None:
            return None
        if isinstance(failure, redis.TimeoutError):
            return redis.TimeoutError(*failure.args)
        return redis.ConnectionError(f"reading the followed generations' events: {failure}")

    @property
    def followers(self) -> int:
        """How many followers the hub hands events to."""
        return sum(len(stream.followers) for stream in self._streams.values())

    @property
    def streams(self) -> int:
        """How many runs' streams the hub reads."""
        return len(self._streams)

    async def join(self, key: str, start: int) -> Place:
        """Follow the stream `key` from index `start`: the hub hands the new place every
        event from the index it reads that stream at (`start`, or where it is already,
        which the follower reads up to itself)."""
        place = Place(key)
        stream = self._streams.get(key)
        new = stream is None
        if stream is None:
            stream = self._streams[key] = _Stream(start)
        stream.followers.add(place)
        self._run()
        if new and self._reading and not self._wake_sent:
            self._wake_sent = True
            await self._wake()
        return place

    def leave(self, place: Place) -> None:
        stream = self._streams.get(place.key)
        if stream is None:
            return
        stream.followers.discard(place)
        if not stream.followers:
            del self._streams[place.key]

    async def close(self) -> None:
        self.closed = True
        self._joined.set()
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            if task.get_loop() is asyncio.get_running_loop():
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        for stream in self._streams.values():
            for place in list(stream.followers):
                place.wake()
        self._streams.clear()

    def _run(self) -> None:
        self._joined.set()
        if self.closed:
            return
        task = self._task
        if task is None or task.done() or task.get_loop() is not asyncio.get_running_loop():
            self._joined = asyncio.Event()  # of this event loop
            self._joined.set()
            self._reading = False
            self._task = asyncio.create_task(self._read(), name="follow generations")

    async def _wake(self) -> None:
        """End the hub's read in progress, so it reads a new stream too."""
        try:
            pipe = self._client().pipeline(transaction=False)
            pipe.xadd(self.wake_key, {"w": "1"}, maxlen=WAKE_KEPT, approximate=False)
            pipe.expire(self.wake_key, WAKE_EXPIRE_S)
            await pipe.execute()
        except redis.RedisError as exc:  # the read then ends at its time-out
            logger.info("could not wake the generations' reader: %s", exc)

    async def _read(self) -> None:
        # `closed` is checked after each await as well as the task cancelled (see
        # `raise_if_cancelled`).
        while not self.closed:
            for key in [key for key, stream in self._streams.items() if not stream.followers]:
                del self._streams[key]
            if not self._streams:
                self._joined.clear()
                await self._joined.wait()
                continue
            reading = dict(self._streams)
            wanted: dict[KeyT, StreamIdT] = {k: f"0-{s.next}" for k, s in reading.items()}
            wanted[self.wake_key] = self._woken_at
            self._reading, self._wake_sent = True, False
            try:
                found = cast(
                    "list[tuple[str, list[tuple[str, dict[str, str]]]]] | None",
                    await self._client().xread(wanted, count=self.count, block=self.block_ms),
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis answered late or went away: read again
                if self.closed:
                    return
                self.failure = exc
                logger.info("reading the followed generations' events again after %s", exc)
                await asyncio.sleep(self.retry)
                continue
            finally:
                self._reading = False
            if self.closed:
                return
            raise_if_cancelled()
            self.failure = None
            for key, entries in found or []:
                if key == self.wake_key:
                    self._woken_at = entries[-1][0]
                    continue
                stream = reading.get(key)
                # a stream nobody follows now, or followed afresh from its own index
                if stream is None or self._streams.get(key) is not stream or not entries:
                    continue
                self._hand(key, stream, entries)
            if found and self.gather > 0:
                # Each read returns as soon as any followed run has a new event; a short
                # pause lets every run's next events gather for the next read, rather
                # than a read (naming every followed stream) per event.
                await asyncio.sleep(self.gather)

    def _hand(self, key: str, stream: _Stream, entries: list[tuple[str, dict[str, str]]]) -> None:
        batch: Batch = []
        for entry_id, fields in entries:
            try:
                batch.append((position(entry_id), decode(fields["e"])))
            except (KeyError, ValueError):
                logger.exception("an unreadable event in %s (%s) is skipped", key, entry_id)
        stream.next = max(stream.next, position(entries[-1][0]) + 1)
        if batch:
            for place in list(stream.followers):
                place.hand(batch)
