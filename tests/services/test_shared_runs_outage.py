"""A registry shared through Redis while Redis is away: its own runs start, are listed and
followed; when Redis is back (empty, as after a restart) the runs' keys and events are
written again and another process follows them to the end."""

from __future__ import annotations

import asyncio
import uuid

from taverna.engine.assembly.context import GenerationType
from taverna.providers.events import TextDelta
from taverna.services.turns import Completed, Ending, RunningGeneration
from taverna.services.turns.shared_runs import SharedRegistry
from tests.faults.stores import private_redis


def test_runs_go_on_while_redis_is_away_and_are_shared_once_it_is_back() -> None:
    with private_redis() as redis:

        async def go() -> None:
            running = SharedRegistry(redis.url, prefix="outage:")
            await running.open()
            try:
                before = RunningGeneration(uuid.uuid4().hex, "chat-1", GenerationType.NORMAL)
                running.add(before)
                before.publish(TextDelta("one "))
                await asyncio.sleep(0.1)
                redis.stop()
                before.publish(TextDelta("two "))
                # started while Redis is away: this process's own
                during = RunningGeneration(uuid.uuid4().hex, "chat-2", GenerationType.NORMAL)
                running.add(during)
                during.publish(TextDelta("three"))
                assert running.for_chat("chat-1") == [before]
                assert running.for_chat("chat-2", running_only=True) == [during]
                redis.start()  # back, and empty
                before.publish(Completed(Ending.SAVED, "one two "))
                during.publish(Completed(Ending.SAVED, "three"))
                following = SharedRegistry(redis.url, prefix="outage:")
                try:
                    for run, text in ((before, "one two "), (during, "three")):
                        remote = following.get(run.id) if await _shared(following, run) else None
                        assert remote is not None, f"{run.id} never reached Redis again"
                        done = await asyncio.wait_for(remote.wait(), 10)
                        assert done == Completed(Ending.SAVED, text)
                        seen = [e async for _, e in following.get(run.id).follow(0)]
                        assert "".join(e.text for e in seen if isinstance(e, TextDelta)) == text
                finally:
                    await following.close()
            finally:
                await running.close()

        asyncio.run(go())


async def _shared(registry: SharedRegistry, run: RunningGeneration) -> bool:
    for _ in range(100):
        if registry.redis.exists(registry.key("run", run.id)):
            return True
        await asyncio.sleep(0.1)
    return False
