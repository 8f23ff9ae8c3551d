"""Another process's generation, followed from its Redis stream (see `shared_runs`)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Mapping
from typing import Protocol, cast

import redis
import redis.asyncio as aredis

from taverna.engine.assembly.context import GenerationType
from taverna.errors import NotFound
from taverna.services.turns.event_codec import decode
from taverna.services.turns.follow_hub import FollowHub, Place, position
from taverna.services.turns.runs import Completed, GenerationEvent, RunningGeneration

logger = logging.getLogger(__name__)

# A follower waits this long for an event before it looks whether the run's process lives
# (and the process's one reader of followed runs blocks this long at most).
FOLLOW_BLOCK_MS = 1000
# Events read at once from one run's stream.
FOLLOW_COUNT = 500
# After Redis answered a follower late (a time-out), the pause before it reads again,
# and how long it keeps trying before the stream ends with the error.
FOLLOW_RETRY = 0.1
FOLLOW_GIVE_UP = 60.0


class RunSource(Protocol):
    """What a followed run asks of the registry that shares it (`SharedRegistry`)."""

    def key(self, *parts: str) -> str: ...
    def async_client(self) -> aredis.Redis: ...
    def follow_hub(self) -> FollowHub: ...
    def alive(self, worker: str) -> bool: ...
    def adopt(self, generation_id: str) -> None: ...


class RemoteGeneration(RunningGeneration):
    """Another process's generation, read from its Redis stream."""

    remote = True

    def __init__(self, registry: RunSource, meta: Mapping[str, str], generation_id: str):
        super().__init__(generation_id, meta["chat_id"], GenerationType(meta["kind"]))
        self.registry = registry
        self.meta = dict(meta)
        self.worker = meta.get("worker", "")
        self.changed_below = meta.get("changed_below") or None
        self.done = meta.get("done") == "1"

    async def follow(self, since: int = 0) -> AsyncIterator[tuple[int, GenerationEvent]]:
        async for batch in self.batches(since):
            for found in batch:
                yield found

    async def batches(self, since: int = 0) -> AsyncIterator[list[tuple[int, GenerationEvent]]]:
        index = max(0, since)
        key = self.registry.key("run", self.id, "events")
        client = self.registry.async_client()
        hub = self.registry.follow_hub()
        place: Place | None = None
        backlog = True  # what is there already is read here, not waited for from the hub
        from_hub = False
        failing_since: float | None = None
        try:
            while True:
                try:
                    if place is None:
                        place = await hub.join(key, index)
                    if backlog:
                        found = cast(
                            "list[tuple[str, list[tuple[str, dict[str, str]]]]]",
                            await client.xread({key: f"0-{index}"}, count=FOLLOW_COUNT),
                        )
                        entries = found[0][1] if found else []
                        backlog = len(entries) == FOLLOW_COUNT  # more may wait
                        handed = [(position(i), decode(entry["e"])) for i, entry in entries]
                        from_hub = False
                    else:
                        handed = await place.take(FOLLOW_BLOCK_MS / 1000)
                        from_hub = True
                        if hub.closed:
                            return  # the process is shutting down
                        if not handed:
                            failure = hub.failed()
                            if failure is not None:
                                raise failure  # given up on below as this follower's own
                            if not await asyncio.to_thread(self.registry.alive, self.worker):
                                await asyncio.to_thread(self.registry.adopt, self.id)
                                continue
                            if not await client.exists(self.registry.key("run", self.id)):
                                return  # expired: nothing more will come
                            continue
                    failing_since = None
                except (redis.TimeoutError, redis.ConnectionError) as exc:
                    # A busy machine or Redis answered late: the stream is read again from
                    # where it was, rather than the page's stream breaking off.
                    now = time.monotonic()
                    failing_since = failing_since if failing_since is not None else now
                    if now - failing_since > FOLLOW_GIVE_UP:
                        raise
                    logger.info("generation %s: reading its events again after %s", self.id, exc)
                    await asyncio.sleep(FOLLOW_RETRY)
                    continue
                batch: list[tuple[int, GenerationEvent]] = []
                ended = False
                for at, event in handed:
                    if at < index:
                        continue  # read already
                    if at > index and from_hub:
                        backlog = True  # a gap: what is missing is read from the stream
                        break
                    if at == len(self.events):
                        self.events.append(event)
                    index = at + 1
                    batch.append((at, event))
                    if isinstance(event, Completed):
                        self.done = ended = True
                        break
                if batch:
                    yield batch
                if ended:
                    return
        finally:
            if place is not None:
                hub.leave(place)

    async def wait(self) -> Completed:
        async for _, event in self.follow(0):
            if isinstance(event, Completed):
                return event
        result = self.result
        if result is None:
            raise NotFound(
                "the generation ended without a result (it expired)",
                code="generation_expired",
            )
        return result
