"""The one reader per process of every run followed in it (`follow_hub`), on a real Redis."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import redis

from taverna.engine.assembly.context import GenerationType
from taverna.providers.events import ErrorKind, TextDelta
from taverna.services.turns import remote_runs, shared_runs
from taverna.services.turns.runs import Completed, Ending, GenerationEvent, RunningGeneration
from taverna.services.turns.shared_runs import ORPHANED, SharedRegistry

URL = os.environ.get("TAVERNA_TEST_REDIS_URL", "")
pytestmark = pytest.mark.skipif(not URL, reason="needs Redis: set TAVERNA_TEST_REDIS_URL")

Pairs = list[tuple[int, GenerationEvent]]


def two_processes(
    test: Callable[[SharedRegistry, SharedRegistry], Awaitable[None]],
) -> None:
    """Run `test` with a registry that runs generations and one that follows them."""

    async def go() -> None:
        prefix = f"test-{uuid.uuid4().hex[:12]}:"
        running, following = SharedRegistry(URL, prefix=prefix), SharedRegistry(URL, prefix=prefix)
        try:
            await test(running, following)
        finally:
            await running.close()
            await following.close()

    asyncio.run(go())


def start(registry: SharedRegistry, n: int) -> RunningGeneration:
    run = RunningGeneration(uuid.uuid4().hex, f"chat-{n}", GenerationType.NORMAL)
    registry.add(run)
    return run


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


def count_reads(registry: SharedRegistry) -> list[bool]:
    """Record each XREAD the registry sends: True for a blocking one."""
    client = registry.async_client()
    real = client.xread
    reads: list[bool] = []

    async def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(kwargs.get("block") is not None)
        return await real(*args, **kwargs)

    client.xread = counted  # type: ignore[method-assign]
    return reads


def test_followers_of_many_runs_are_served_by_one_read() -> None:
    """Thirty followers of thirty runs in one process: each round of events (one a run)
    reaches all of them through one blocking XREAD or two, not one a follower."""

    async def test(running: SharedRegistry, following: SharedRegistry) -> None:
        reads = count_reads(following)
        runs = [start(running, n) for n in range(30)]
        seen: dict[str, Pairs] = {run.id: [] for run in runs}

        async def follow(run: RunningGeneration) -> None:
            async for batch in following.get(run.id).batches(0):
                seen[run.id] += batch

        tasks = [asyncio.create_task(follow(run)) for run in runs]
        hub = following.follow_hub()
        await until(lambda: hub.followers == 30)
        await asyncio.sleep(0.1)  # the hub waits on all thirty streams now
        assert len(reads) - sum(reads) == 30  # each read what was there, once
        blocking = sum(reads)
        for round_ in range(5):
            for run in runs:
                run.publish(TextDelta(f"t{round_}"))
            await until(lambda r=round_ + 1: all(len(s) == r for s in seen.values()))
        assert sum(reads) - blocking <= 10
        assert len(reads) - sum(reads) == 30  # nobody read on its own meanwhile
        for run in runs:
            run.publish(Completed(Ending.SAVED, "t0t1t2t3t4"))
        await asyncio.wait_for(asyncio.gather(*tasks), 10)
        for run in runs:
            assert seen[run.id] == [
                *[(i, TextDelta(f"t{i}")) for i in range(5)],
                (5, Completed(Ending.SAVED, "t0t1t2t3t4")),
            ]
        await until(lambda: hub.streams == 0)

    two_processes(test)


def test_a_follower_of_a_new_run_does_not_wait_for_the_read_under_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hub blocks on one run's stream; a run followed meanwhile wakes it, so its
    first event arrives at once, not at the end of the hub's blocking read."""
    for module in (shared_runs, remote_runs):  # a margin on a busy machine
        monkeypatch.setattr(module, "FOLLOW_BLOCK_MS", 5000)

    async def test(running: SharedRegistry, following: SharedRegistry) -> None:
        quiet, new = start(running, 1), start(running, 2)
        quiet_follower = following.get(quiet.id).batches(0)
        waiting = asyncio.create_task(anext(quiet_follower))
        hub = following.follow_hub()
        await until(lambda: hub.followers == 1)
        await asyncio.sleep(0.1)  # the hub's read now blocks for almost five seconds
        new_follower = following.get(new.id).batches(0)
        first = asyncio.create_task(anext(new_follower))
        await until(lambda: hub.followers == 2)
        began = time.monotonic()
        new.publish(TextDelta("now"))
        assert await asyncio.wait_for(first, 5) == [(0, TextDelta("now"))]
        assert time.monotonic() - began < 2
        waiting.cancel()
        await new_follower.aclose()

    two_processes(test)


def test_followers_joining_mid_stream_get_everything_from_their_index() -> None:
    """Followers of one run at different places: one live from the start, one joining
    at 0 after 1,200 events (more than one read's worth), one at 700; each gets every
    event from its index once, in order."""

    async def test(running: SharedRegistry, following: SharedRegistry) -> None:
        run = start(running, 1)

        async def follow(since: int) -> Pairs:
            return [pair async for pair in following.get(run.id).follow(since)]

        early = asyncio.create_task(follow(0))
        hub = following.follow_hub()
        await until(lambda: hub.followers == 1)
        for i in range(1200):
            run.publish(TextDelta(f"{i} "))
            if i % 100 == 0:
                await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)  # the hub has read the stream past where late ones start
        late = [asyncio.create_task(follow(since)) for since in (0, 700)]
        await until(lambda: hub.followers == 3)
        for i in range(1200, 1300):
            run.publish(TextDelta(f"{i} "))
        run.publish(Completed(Ending.SAVED, "all"))
        everything = [(i, TextDelta(f"{i} ")) for i in range(1300)]
        everything.append((1300, Completed(Ending.SAVED, "all")))
        found = await asyncio.wait_for(asyncio.gather(early, *late), 20)
        assert found == [everything, everything, everything[700:]]
        await until(lambda: hub.streams == 0)

    two_processes(test)


def test_a_follower_that_goes_away_leaves_the_hub() -> None:
    """A follower cancelled mid-stream (the page went away), one closed mid-stream and
    one dropped unclosed leave nothing behind in the hub; closing the registry stops it."""

    async def test(running: SharedRegistry, following: SharedRegistry) -> None:
        run = start(running, 1)
        hub = following.follow_hub()
        got: list[int] = []

        async def follow() -> None:
            async for batch in following.get(run.id).batches(0):
                got.extend(i for i, _ in batch)

        cancelled = asyncio.create_task(follow())
        closed = following.get(run.id).batches(0)
        dropped: AsyncIterator[Pairs] | None = following.get(run.id).batches(0)
        assert dropped is not None
        run.publish(TextDelta("a"))
        assert await asyncio.wait_for(anext(closed), 5) == [(0, TextDelta("a"))]
        assert await asyncio.wait_for(anext(dropped), 5) == [(0, TextDelta("a"))]
        await until(lambda: got == [0] and hub.followers == 3)
        run.publish(TextDelta("b"))
        await until(lambda: got == [0, 1])
        cancelled.cancel()
        await asyncio.gather(cancelled, return_exceptions=True)
        assert hub.followers == 2
        await closed.aclose()
        assert hub.followers == 1
        dropped = None  # the generator is collected, unclosed
        await until(lambda: hub.followers == 0)
        run.publish(TextDelta("c"))  # nobody follows: the hub drops the stream
        await until(lambda: hub.streams == 0)
        reader = hub._task
        assert reader is not None and not reader.done()
        await following.close()
        assert reader.done()

    two_processes(test)


def test_a_followed_run_whose_process_died_is_adopted() -> None:
    """The run's process stops renewing its lease mid-stream: the follower, hearing
    nothing, adopts the run and its stream ends with the interruption."""

    async def test(running: SharedRegistry, following: SharedRegistry) -> None:
        run = start(running, 1)
        run.publish(TextDelta("half "))
        run.publish(TextDelta("way"))
        seen: Pairs = []

        async def follow() -> None:
            async for batch in following.get(run.id).batches(0):
                seen.extend(batch)

        reading = asyncio.create_task(follow())
        await until(lambda: len(seen) == 2)
        await running.close()  # its lease goes, as when the process is killed
        await asyncio.wait_for(reading, 15)
        assert seen[:2] == [(0, TextDelta("half ")), (1, TextDelta("way"))]
        end = seen[2][1]
        assert isinstance(end, Completed)
        assert (end.outcome, end.text, end.error) == (Ending.FAILED, "half way", ORPHANED)
        assert end.cause == ErrorKind.INTERRUPTED.value
        assert following.follow_hub().streams == 0

    two_processes(test)


def test_followers_give_up_when_the_hub_cannot_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Redis refusing the hub's reads for longer than FOLLOW_GIVE_UP ends each follower
    with the error; the hub itself keeps trying."""
    monkeypatch.setattr(remote_runs, "FOLLOW_GIVE_UP", 1.5)

    async def test(running: SharedRegistry, following: SharedRegistry) -> None:
        run = start(running, 1)
        client = following.async_client()
        real = client.xread

        async def refused(*args: Any, **kwargs: Any) -> Any:
            if kwargs.get("block") is not None:
                raise redis.ConnectionError("Redis went away")
            return await real(*args, **kwargs)

        client.xread = refused  # type: ignore[method-assign]

        async def follow() -> Pairs:
            return [pair async for pair in following.get(run.id).follow(0)]

        began = time.monotonic()
        with pytest.raises(redis.ConnectionError):
            await asyncio.wait_for(follow(), 15)
        assert time.monotonic() - began < 6
        hub = following.follow_hub()
        assert hub._task is not None and not hub._task.done()
        assert hub.followers == 0

    two_processes(test)
