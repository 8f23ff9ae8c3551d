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
from taverna.services.generation.runs import Completed, Ending, RunningGeneration
from taverna.services.generation.shared_runs import SharedRegistry

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
