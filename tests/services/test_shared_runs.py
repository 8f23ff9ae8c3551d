"""Generations shared through Redis, read by another process's registry."""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any

import pytest
import redis

from taverna.engine.assembly.context import GenerationType
from taverna.providers.events import TextDelta
from taverna.services.turns.runs import Completed, Ending, RunningGeneration
from taverna.services.turns.shared_runs import SharedRegistry

URL = os.environ.get("TAVERNA_TEST_REDIS_URL", "")
pytestmark = pytest.mark.skipif(not URL, reason="needs Redis: set TAVERNA_TEST_REDIS_URL")


def test_a_follower_reads_on_when_redis_answers_it_late(monkeypatch: pytest.MonkeyPatch) -> None:
    """A time-out reading a run's events (a busy machine) does not break the follower's
    stream: it reads again from where it was and gets every event once."""

    async def go() -> list[Any]:
        prefix = f"test-{uuid.uuid4().hex[:12]}:"
        running, following = SharedRegistry(URL, prefix=prefix), SharedRegistry(URL, prefix=prefix)
        try:
            run = RunningGeneration(uuid.uuid4().hex, "chat-1", GenerationType.NORMAL)
            running.add(run)
            remote = following.get(run.id)
            assert remote.remote
            client = following.async_client()
            real = client.xread
            calls: list[int] = []

            async def late(*args: Any, **kwargs: Any) -> Any:
                calls.append(1)
                if len(calls) == 2:
                    raise redis.TimeoutError("Timeout reading from 127.0.0.1:6379")
                return await real(*args, **kwargs)

            monkeypatch.setattr(client, "xread", late)

            async def follow() -> list[Any]:
                return [event async for _, event in remote.follow(0)]

            reading = asyncio.create_task(follow())
            run.publish(TextDelta("Hel"))
            await asyncio.sleep(0.05)
            run.publish(TextDelta("lo"))
            run.publish(Completed(Ending.SAVED, "Hello"))
            seen = await asyncio.wait_for(reading, 20)
            assert len(calls) >= 3
            return seen
        finally:
            await running.close()
            await following.close()

    seen = asyncio.run(go())
    assert seen == [TextDelta("Hel"), TextDelta("lo"), Completed(Ending.SAVED, "Hello")]


def test_events_published_together_reach_redis_in_one_round_trip() -> None:
    """What several runs published in one turn of the loop is written in one round trip,
    each event under its index's entry id, and another process reads every one of them
    from any index on."""

    async def go() -> None:
        prefix = f"test-{uuid.uuid4().hex[:12]}:"
        running, following = SharedRegistry(URL, prefix=prefix), SharedRegistry(URL, prefix=prefix)
        try:
            client = running.async_client()
            real = client.eval
            writes: list[int] = []

            async def counted(*args: Any, **kwargs: Any) -> Any:
                writes.append(1)
                return await real(*args, **kwargs)

            client.eval = counted  # type: ignore[method-assign]
            runs = [
                RunningGeneration(uuid.uuid4().hex, f"chat-{n}", GenerationType.NORMAL)
                for n in (1, 2)
            ]
            for run in runs:
                running.add(run)
            for run in runs:
                for piece in ("a", "b", "c"):
                    run.publish(TextDelta(piece))
            await asyncio.sleep(0.2)
            assert len(writes) == 1  # six events of two runs, one round trip
            for run in runs:
                run.publish(Completed(Ending.SAVED, "abc"))
            for run in runs:
                remote = following.get(run.id)
                assert remote.remote
                seen = [pair async for pair in remote.follow(1)]
                assert seen == [
                    (1, TextDelta("b")),
                    (2, TextDelta("c")),
                    (3, Completed(Ending.SAVED, "abc")),
                ]
                entries = await client.xrange(running.key("run", run.id, "events"))
                assert [entry_id for entry_id, _ in entries] == ["0-1", "0-2", "0-3", "0-4"]
                meta = await client.hgetall(running.key("run", run.id))
                assert meta["done"] == "1"
                assert await client.get(running.key("chat", run.chat_id, "run")) is None
        finally:
            await running.close()
            await following.close()

    asyncio.run(go())


def test_a_failed_write_is_said_and_its_runs_shared_once_redis_answers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Redis refusing one write is said in the log; the runs it held are shared once Redis
    answers again (nothing they published is lost), and so are the runs started after."""

    async def go() -> None:
        prefix = f"test-{uuid.uuid4().hex[:12]}:"
        running, following = SharedRegistry(URL, prefix=prefix), SharedRegistry(URL, prefix=prefix)
        try:
            client = running.async_client()
            real = client.eval
            failures = [1]

            async def failing(*args: Any, **kwargs: Any) -> Any:
                if failures:
                    failures.pop()
                    raise redis.ConnectionError("Redis went away")
                return await real(*args, **kwargs)

            client.eval = failing  # type: ignore[method-assign]
            lost = RunningGeneration(uuid.uuid4().hex, "chat-1", GenerationType.NORMAL)
            running.add(lost)
            lost.publish(TextDelta("gone"))
            await asyncio.sleep(0.2)
            assert "the events of 1 runs wait for Redis" in caplog.text
            lost.publish(Completed(Ending.SAVED, "gone"))
            late = await asyncio.wait_for(following.get(lost.id).wait(), 10)
            assert late == Completed(Ending.SAVED, "gone")
            replayed = [e async for _, e in following.get(lost.id).follow(0)]
            assert replayed == [TextDelta("gone"), Completed(Ending.SAVED, "gone")]
            kept = RunningGeneration(uuid.uuid4().hex, "chat-2", GenerationType.NORMAL)
            running.add(kept)
            kept.publish(TextDelta("here"))
            kept.publish(Completed(Ending.SAVED, "here"))
            remote = following.get(kept.id)
            seen = await asyncio.wait_for(remote.wait(), 10)
            assert seen == Completed(Ending.SAVED, "here")
            replayed = [e async for _, e in following.get(kept.id).follow(0)]
            assert replayed == [TextDelta("here"), Completed(Ending.SAVED, "here")]
        finally:
            await running.close()
            await following.close()

    asyncio.run(go())


def test_a_worker_following_many_streams_still_shares_its_own() -> None:
    """Each follower waits on a Redis connection of its own. Two workers each run 150
    generations and follow the other's 150 (past redis-py's default pool of 100, which
    refused the connections a worker then needed to share its own runs' events): every
    follower reads every event."""

    async def go() -> list[list[Any]]:
        prefix = f"test-{uuid.uuid4().hex[:12]}:"
        one, two = SharedRegistry(URL, prefix=prefix), SharedRegistry(URL, prefix=prefix)
        try:
            runs: list[tuple[SharedRegistry, RunningGeneration]] = []
            for owner, n in [(one, i) for i in range(150)] + [(two, i) for i in range(150, 300)]:
                run = RunningGeneration(uuid.uuid4().hex, f"chat-{n}", GenerationType.NORMAL)
                owner.add(run)
                runs.append((owner, run))

            async def follow(owner: SharedRegistry, run: RunningGeneration) -> list[Any]:
                remote = (two if owner is one else one).get(run.id)
                assert remote.remote
                return [event async for _, event in remote.follow(0)]

            reading = [asyncio.create_task(follow(owner, run)) for owner, run in runs]
            await asyncio.sleep(0.5)  # every follower waits on Redis now
            for _, run in runs:
                run.publish(TextDelta("hi"))
                run.publish(Completed(Ending.SAVED, "hi"))
            return await asyncio.wait_for(asyncio.gather(*reading), 60)
        finally:
            await one.close()
            await two.close()

    seen = asyncio.run(go())
    assert all(events == [TextDelta("hi"), Completed(Ending.SAVED, "hi")] for events in seen)
