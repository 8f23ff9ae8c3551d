"""Generations shared by several server processes through Redis (redis-py).

Each process runs its own generations as in one process (a `RunningGeneration` in
memory, followed from there by its own pages) and copies every event, as it comes,
into a Redis stream of the run, so any other process can replay and follow it:

- `{prefix}run:{id}` (hash): the run's chat, kind, process, and what a draft needs;
- `{prefix}run:{id}:events` (stream): event `i` under the entry id `0-{i+1}`, so a
  follower resumes after index `i` by reading past `0-{i+1}`;
- `{prefix}chat:{chat}:run`: the run generating in a chat, claimed with SET NX, so two
  processes never start two generations in one chat;
- `{prefix}worker:{id}`: a lease each process renews every second; a run whose process
  lost its lease (killed, say) is *adopted* by the first process that looks: what it
  streamed is kept as a draft in the shared store and its stream is ended;
- `{prefix}worker:{id}:wake` (stream): wakes the process's one reader of the runs it
  follows when it follows a new one (`follow_hub`);
- `{prefix}round:{id}` (hash): a group round's chat, speakers, runs so far and end, so
  any process reads it; its Stop reaches the process running it;
- channel `{prefix}stop`: a Stop asked of another process's run (or `round:{id}`, of a
  round); channel `{prefix}documents`: stored documents (settings, say) were written,
  so the other processes read again what they keep of them.

A chat written by another process needs no message: what a process keeps of a chat's
path is named by the chat's revision and brought up to date from the store's change
log when a turn reads it (`turn_paths`).

Finished runs' keys expire `keep_finished` seconds after the end, as the in-memory
registry forgets them.

When Redis is away, each process goes on with its own runs: its pages follow them, its
chat views answer (they list its own runs only), and a chat stays busy through the run's
lease in the database (`leases`, when the registry has one), not through Redis. The
events not yet copied are copied, and the runs' keys and claims written again, once
Redis answers (after a restart that lost them, too).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, cast

import redis
import redis.asyncio as aredis

from taverna.errors import Conflict, NotFound
from taverna.providers.events import ErrorKind, TextDelta
from taverna.services.turns.event_codec import decode, encode
from taverna.services.turns.follow_hub import FollowHub, raise_if_cancelled
from taverna.services.turns.leases import BEAT, ChatLeases
from taverna.services.turns.remote_runs import (
    FOLLOW_BLOCK_MS,
    FOLLOW_COUNT,
    FOLLOW_RETRY,
    RemoteGeneration,
)
from taverna.services.turns.runs import (
    Completed,
    Ending,
    GenerationRegistry,
    GroupRound,
    RunningGeneration,
)
from taverna.services.turns.shared_scripts import APPEND, RELEASE
from taverna.store.repository import Store

logger = logging.getLogger(__name__)

# A process's lease lasts this long unless renewed (every LEASE_RENEW seconds, by a
# thread of its own: an event loop slowed by a burst of requests must not let it lapse,
# or another process would take over runs that are still streaming).
LEASE_MS = 6000
LEASE_RENEW = 1.0
# After each copy of events into Redis, and after each read of the followed streams that
# found some, the process waits this long before the next, so one command carries what
# all its runs streamed meanwhile rather than one token each (a model streams a token per
# few tens of milliseconds per run; a hundred runs make thousands of commands a second).
GATHER_S = 0.01
# The async client's pool is sized for many commands at once (followers reading what a
# run has streamed so far, runs shared, pub/sub), and past that a command waits for a
# connection rather than failing.
ASYNC_CONNECTIONS = 2048
ASYNC_CONNECTION_WAIT = 30.0
ORPHANED = "the server process running this generation stopped before it ended"
# After a copy into Redis failed, the pause before the next try.
SHARE_RETRY = 1.0


class SharedRegistry(GenerationRegistry):
    """The generations of every process on one Redis (see the module doc)."""

    def __init__(self, url: str, *, keep_finished: float = 600.0, prefix: str = "taverna:") -> None:
        super().__init__(keep_finished)
        self.url = url
        self.prefix = prefix
        self.worker_id = uuid.uuid4().hex
        self.redis = redis.Redis.from_url(url, socket_timeout=5, decode_responses=True)
        self.redis.ping()  # an unreachable Redis is said at start, not at the first turn
        self._async: aredis.Redis | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._mirrors: set[asyncio.Task[None]] = set()
        # Runs of this process with events not yet in their streams, and how many of
        # each run's events are there; one task copies them all (see `_share`).
        self._unsent: dict[str, RunningGeneration] = {}
        self._sent: dict[str, int] = {}
        self._woken = asyncio.Event()
        self._sharing: asyncio.Task[None] | None = None
        self._leasing = threading.Event()  # set: the lease thread stops
        self._lease_thread: threading.Thread | None = None
        # Set by the generation service: stop one of this process's runs; keep an
        # orphaned run's text as a draft (its meta, its text: the draft's id).
        self.on_stop: Callable[[str], Awaitable[object]] | None = None
        self.on_orphan: Callable[[Mapping[str, str], str], str | None] | None = None
        self.on_stop_round: Callable[[str], Awaitable[object]] | None = None
        # Called when another process wrote documents, and whenever this one listens
        # again after Redis was away (what was announced meanwhile is lost).
        self.on_documents: Callable[[], None] | None = None
        self._rounds_here: set[str] = set()
        self._hub: FollowHub | None = None
        # The chats' leases in the database (set by the workspace, which has the store).
        self.leases: ChatLeases | None = None
        # Runs of this process whose keys and claim Redis may lack (it was away when they
        # started, or it came back empty): written again with their next events.
        self._rejoin: set[str] = set()
        self._renew()

    def key(self, *parts: str) -> str:
        return self.prefix + ":".join(parts)

    def async_client(self) -> aredis.Redis:
        if self._async is None:
            pool = aredis.BlockingConnectionPool.from_url(
                self.url,
                decode_responses=True,
                max_connections=ASYNC_CONNECTIONS,
                timeout=ASYNC_CONNECTION_WAIT,
            )
            # the client owns its pool: closing it closes the pool's connections too
            self._async = aredis.Redis.from_pool(pool)
        return self._async

    def follow_hub(self) -> FollowHub:
        """The one reader of the runs followed in this process (see `follow_hub`)."""
        if self._hub is None or self._hub.closed:
            self._hub = FollowHub(
                self.async_client,
                self.key("worker", self.worker_id, "wake"),  # deleted by `close`
                block_ms=FOLLOW_BLOCK_MS,
                count=FOLLOW_COUNT,
                retry=FOLLOW_RETRY,
                gather=GATHER_S,
            )
        return self._hub

    # ------------------------------------------------------------ the process

    async def open(self) -> None:
        self._renew()
        self._leasing.clear()
        self._lease_thread = threading.Thread(
            target=self._keep_lease, name="redis lease", daemon=True
        )
        self._lease_thread.start()
        self._tasks = [asyncio.create_task(self._listen(), name="redis listener")]

    async def close(self) -> None:
        self._leasing.set()
        if self._lease_thread is not None:
            await asyncio.to_thread(self._lease_thread.join)
            self._lease_thread = None
        for task in [*self._tasks, *self._mirrors]:
            task.cancel()
        for task in [*self._tasks, *self._mirrors]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []
        hub, self._hub = self._hub, None
        if hub is not None:
            await hub.close()
        if self._async is not None:
            await self._async.aclose()
            self._async = None
        with contextlib.suppress(redis.RedisError):
            worker = self.key("worker", self.worker_id)
            self.redis.delete(worker, f"{worker}:wake")
        self.redis.close()

    def _renew(self) -> None:
        self.redis.set(self.key("worker", self.worker_id), "1", px=LEASE_MS)

    def use_leases(self, store: Store) -> None:
        """Hold each run's chat in `store`, the database, too (see the module doc)."""
        self.leases = ChatLeases(store, self.worker_id, self._running_here)
        try:
            self.leases.beat()
        except Exception as exc:
            logger.warning("could not beat this process's heart in the database: %s", exc)

    def _running_here(self, run_id: str) -> bool:
        run = self._runs.get(run_id)
        return run is not None and not run.done

    def _keep_lease(self) -> None:
        beaten = time.monotonic()
        while not self._leasing.wait(LEASE_RENEW):
            try:
                self._renew()
            except redis.RedisError as exc:
                logger.warning("could not renew this process's lease in Redis: %s", exc)
            if self.leases is not None and time.monotonic() - beaten >= BEAT:
                beaten = time.monotonic()
                try:
                    self.leases.beat()
                except Exception as exc:
                    logger.warning("could not renew this process's heartbeat: %s", exc)

    async def _listen(self) -> None:
        stop, documents = self.key("stop"), self.key("documents")
        while True:
            try:
                pubsub = self.async_client().pubsub()
                await pubsub.subscribe(stop, documents)
                if self.on_documents is not None:
                    self.on_documents()  # what was announced before listening was missed
                async for message in pubsub.listen():
                    if message.get("type") != "message":
                        continue
                    channel, data = str(message["channel"]), str(message["data"])
                    if channel == stop:
                        self._stop_asked(data)
                    elif (
                        channel == documents
                        and data != self.worker_id
                        and self.on_documents is not None
                    ):
                        self.on_documents()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis went away: listen again once it is back
                logger.warning("Redis listener: %s", exc)
                await asyncio.sleep(1)

    def _stop_asked(self, name: str) -> None:
        kind, _, round_id = name.partition(":")
        if kind == "round" and round_id:
            if round_id in self._rounds_here and self.on_stop_round is not None:
                self._spawn(self.on_stop_round(round_id))
            return
        run = self._runs.get(name)
        if run is not None and not run.done and self.on_stop is not None:
            self._spawn(self.on_stop(name))

    def _spawn(self, work: Awaitable[object]) -> None:
        async def run() -> None:
            try:
                await work
            except Exception:
                logger.exception("a Stop asked by another process failed")

        task = asyncio.create_task(run())
        self._mirrors.add(task)
        task.add_done_callback(self._mirrors.discard)

    def alive(self, worker: str) -> bool:
        """Whether the process `worker` holds its lease."""
        return worker == self.worker_id or bool(self.redis.exists(self.key("worker", worker)))

    def documents_changed(self) -> None:
        """Tell the other processes that this one wrote stored documents."""
        with contextlib.suppress(redis.RedisError):
            self.redis.publish(self.key("documents"), self.worker_id)

    # ------------------------------------------------------------ the registry

    def add(self, run: RunningGeneration) -> None:
        if self.leases is not None:
            self.leases.take(run.chat_id, run.id, owner=str(run.draft_info.get("owner") or ""))
        try:
            self._claim(run)
        except redis.RedisError as exc:
            # Redis is away: the run is this process's alone until Redis is back (the
            # database's lease keeps the chat busy meanwhile)
            logger.warning("generation %s runs unshared until Redis is back: %s", run.id, exc)
            self._rejoin.add(run.id)
        except BaseException:
            if self.leases is not None:
                self.leases.release(run.chat_id, run.id)
            raise
        super().add(run)
        self._sent[run.id] = 0
        run.on_publish = self._published
        self._published(run)
        if self._sharing is None or self._sharing.done():
            self._woken = asyncio.Event()  # of this event loop
            self._woken.set()
            self._sharing = asyncio.create_task(self._share(), name="share generations")
            self._mirrors.add(self._sharing)
            self._sharing.add_done_callback(self._mirrors.discard)

    def _claim(self, run: RunningGeneration, *, again: bool = False) -> None:
        """Claim the run's chat in Redis (Conflict if another live run holds it) and write
        the run's keys; `again`: after Redis was away, for a run that holds the chat."""
        claim = self.key("chat", run.chat_id, "run")
        if again:
            self.redis.set(claim, run.id)
        elif not self.redis.set(claim, run.id, nx=True):
            holder = cast("str | None", self.redis.get(claim))
            if holder is not None and self._running_elsewhere(holder):
                raise Conflict(
                    "a generation is already running in this chat; stop it first",
                    code="generation_running",
                )
            self.redis.set(claim, run.id)
        self._write_meta(run)

    def _write_meta(self, run: RunningGeneration) -> None:
        """The run's hash: its chat, kind, process, and what a draft of it needs ("done"
        is set with its last event)."""
        meta = {
            "worker": self.worker_id,
            "chat_id": run.chat_id,
            "kind": run.kind.value,
            "changed_below": run.changed_below or "",
            "done": "0",
            "generation_id": run.id,
            **{k: "" if v is None else str(v) for k, v in run.draft_info.items()},
        }
        self.redis.hset(self.key("run", run.id), mapping=cast(Any, meta))

    def _published(self, run: RunningGeneration) -> None:
        if run.id in self._sent:
            self._unsent[run.id] = run
            self._woken.set()
        if run.done and self.leases is not None:
            # the chat is free again: its lease goes back, off the event loop
            leases = self.leases
            with contextlib.suppress(RuntimeError):
                asyncio.get_running_loop().run_in_executor(
                    None, leases.release, run.chat_id, run.id
                )

    async def _share(self) -> None:
        """Copy the runs' new events into their streams: whatever every run published
        since the last write goes in one command (`APPEND`) and one round trip (while
        it is under way and `GATHER_S` after, the next batch gathers), rather than one
        round trip a token."""
        client = self.async_client()
        while True:
            await self._woken.wait()
            self._woken.clear()
            runs, self._unsent = self._unsent, {}
            rejoin = [run for run in runs.values() if run.id in self._rejoin]
            if rejoin:
                try:
                    await asyncio.to_thread(self._claim_again, rejoin)
                except redis.RedisError as exc:
                    logger.info("Redis still away: %s", exc)
                    self._rejoin.update(runs)  # Redis may come back without any of them
                    await self._share_later(runs)
                    continue
            ends: list[tuple[RunningGeneration, int, int]] = []
            streams: list[str] = []
            carried: list[RunningGeneration] = []
            appended: list[str | int] = []
            for run in runs.values():
                sent, events = self._sent[run.id], run.events
                end = len(events)
                if end > sent:
                    streams.append(self.key("run", run.id, "events"))
                    carried.append(run)
                    last = "1" if isinstance(events[end - 1], Completed) else "0"
                    claim = self.key("chat", run.chat_id, "run")
                    appended += (sent, end - sent, last, claim, run.id)
                    appended += [encode(event) for event in events[sent:end]]
                ends.append((run, sent, end))
            missing: list[int] = []
            try:
                if streams:
                    keep = int(self.keep_finished)
                    found = await client.eval(APPEND, len(streams), *streams, keep, *appended)
                    missing = [int(k) for k in cast("list[Any]", found or [])]
            except redis.RedisError as exc:
                # Redis is away: this process's pages follow its runs meanwhile; what they
                # published is copied once Redis is back, their keys written again
                logger.warning("the events of %d runs wait for Redis: %s", len(ends), exc)
                self._rejoin.update(run.id for run, _, _ in ends)
                await self._share_later(runs)
                continue
            finally:
                raise_if_cancelled()
            lost = {carried[k - 1].id for k in missing}
            for run, _, end in ends:
                if run.id in lost:
                    # Redis came back without it: written again, whole, with the next batch
                    self._rejoin.add(run.id)
                    self._sent[run.id] = 0
                    self._unsent[run.id] = run
                    self._woken.set()
                elif run.done and end == len(run.events):
                    self._forget(run)
                elif run.id in self._sent:
                    self._sent[run.id] = end
            await asyncio.sleep(GATHER_S)  # what is published meanwhile goes in the next

    async def _share_later(self, runs: Mapping[str, RunningGeneration]) -> None:
        """Try `runs` again after a pause (their new events join them meanwhile)."""
        self._unsent = {**runs, **self._unsent}
        await asyncio.sleep(SHARE_RETRY)
        self._woken.set()

    def _claim_again(self, runs: list[RunningGeneration]) -> None:
        """Write again the keys and claims of runs Redis may have lost; a finished run's
        stream is written from its start (its followers elsewhere read it whole)."""
        for run in runs:
            if not self.redis.exists(self.key("run", run.id)):
                self._sent[run.id] = 0  # Redis came back empty: the whole stream again
            if not run.done:
                self._claim(run, again=True)
            else:
                self._write_meta(run)  # its end, in the same batch, marks it done
            self._rejoin.discard(run.id)

    def _forget(self, run: RunningGeneration) -> None:
        self._sent.pop(run.id, None)
        self._unsent.pop(run.id, None)
        run.on_publish = None

    def get(self, generation_id: str) -> RunningGeneration:
        run = self._runs.get(generation_id)
        if run is not None:
            return run
        found = self._meta(generation_id)
        if found is None:
            raise NotFound(
                "no such generation (it may have finished long ago)",
                code="no_such_generation_expired",
            )
        return RemoteGeneration(self, found, generation_id)

    def for_chat(self, chat_id: str, *, running_only: bool = False) -> list[RunningGeneration]:
        mine = super().for_chat(chat_id, running_only=running_only)
        try:
            return self._for_chat(chat_id, mine, running_only=running_only)
        except redis.RedisError as exc:
            # Redis is away: this process's own runs (a run elsewhere keeps the chat busy
            # through its lease in the database)
            logger.info("chat %s: Redis away, its runs here only: %s", chat_id, exc)
            return mine

    def _for_chat(
        self, chat_id: str, mine: list[RunningGeneration], *, running_only: bool
    ) -> list[RunningGeneration]:
        generation_id = cast("str | None", self.redis.get(self.key("chat", chat_id, "run")))
        if generation_id is None or generation_id in self._runs:
            return mine
        meta = self._meta(generation_id)
        if meta is None:
            return mine
        if meta.get("done") != "1" and not self.alive(meta.get("worker", "")):
            self.adopt(generation_id)
            meta = self._meta(generation_id) or meta
        if running_only and meta.get("done") == "1":
            return mine
        return [*mine, RemoteGeneration(self, meta, generation_id)]

    def _meta(self, generation_id: str) -> dict[str, str] | None:
        raw = cast("dict[str, str]", self.redis.hgetall(self.key("run", generation_id)))
        return dict(raw) if raw else None

    def _running_elsewhere(self, generation_id: str) -> bool:
        if generation_id in self._runs:
            return not self._runs[generation_id].done
        meta = self._meta(generation_id)
        if meta is None or meta.get("done") == "1":
            return False
        if self.alive(meta.get("worker", "")):
            return True
        self.adopt(generation_id)
        return False

    def bind(
        self,
        *,
        stop: Callable[[str], Awaitable[object]],
        orphan: Callable[[Mapping[str, str], str], str | None],
        stop_round: Callable[[str], Awaitable[object]] | None = None,
    ) -> None:
        self.on_stop, self.on_orphan = stop, orphan
        self.on_stop_round = stop_round

    # ------------------------------------------------------------ group rounds

    def round_changed(self, found: GroupRound) -> None:
        self._rounds_here.add(found.id)
        if found.done:
            self._rounds_here.discard(found.id)
        key = self.key("round", found.id)
        fields = {
            "worker": self.worker_id,
            "chat_id": found.chat_id,
            "speakers": json.dumps(list(found.speakers), ensure_ascii=False),
            "runs": json.dumps([run.id for run in found.runs]),
            "done": "1" if found.done else "0",
        }
        try:
            pipe = self.redis.pipeline(transaction=False)
            pipe.hset(key, mapping=cast(Any, fields))
            # a round lasts minutes; it is forgotten as its runs are once it has ended
            pipe.expire(key, int(self.keep_finished) * (1 if found.done else 6))
            pipe.execute()
        except redis.RedisError as exc:
            logger.warning("group round %s could not be shared: %s", found.id, exc)

    def round(self, round_id: str) -> GroupRound | None:
        try:
            meta = cast("dict[str, str]", self.redis.hgetall(self.key("round", round_id)))
        except redis.RedisError:
            return None  # Redis is away: only this process's rounds are known
        if not meta:
            return None
        found = GroupRound(round_id, meta["chat_id"], tuple(json.loads(meta["speakers"])))
        for run_id in json.loads(meta["runs"]):
            with contextlib.suppress(NotFound):
                found.runs.append(self.get(run_id))
        # a round whose process died ends with it
        found.done = meta.get("done") == "1" or not self.alive(meta.get("worker", ""))
        return found

    async def stop_round_elsewhere(self, round_id: str) -> None:
        await self.async_client().publish(self.key("stop"), f"round:{round_id}")

    async def stop_elsewhere(
        self, run: RunningGeneration, timeout: float = 15.0
    ) -> Completed | None:
        """Ask the process running `run` to stop it, and wait for its last event (a run
        whose process died is adopted meanwhile)."""
        if not run.done:
            await self.async_client().publish(self.key("stop"), run.id)
        with contextlib.suppress(TimeoutError):
            return await asyncio.wait_for(run.wait(), timeout)
        return run.result

    # ------------------------------------------------------------ orphans

    def adopt(self, generation_id: str) -> None:
        """End a run whose process died: its streamed text becomes a draft (once, by
        whichever process gets here first) and its stream ends as a failure."""
        meta = self._meta(generation_id)
        if meta is None or meta.get("done") == "1":
            return
        if self.leases is not None and self.leases.beats(meta.get("worker", "")):
            return  # it still beats in the database: Redis lost its lease (a restart)
        if not self.redis.set(self.key("run", generation_id, "adopted"), self.worker_id, nx=True):
            return
        stream = self.key("run", generation_id, "events")
        entries = cast("list[tuple[str, dict[str, str]]]", self.redis.xrange(stream))
        events = [decode(fields["e"]) for _, fields in entries]
        if events and isinstance(events[-1], Completed):
            self.redis.hset(self.key("run", generation_id), "done", "1")
            return
        text = "".join(e.text for e in events if isinstance(e, TextDelta))
        draft_id = None
        error = ORPHANED
        if self.on_orphan is not None:
            try:
                draft_id = self.on_orphan(meta, text)
            except Exception as exc:
                logger.exception("the draft of generation %s could not be kept", generation_id)
                error = f"{ORPHANED}; its text could not be kept as a draft: {type(exc).__name__}"
        done = Completed(
            Ending.FAILED, text, draft_id=draft_id, error=error, cause=ErrorKind.INTERRUPTED.value
        )
        keep = int(self.keep_finished)
        pipe = self.redis.pipeline(transaction=False)
        pipe.xadd(stream, {"e": encode(done)}, id=f"0-{len(entries) + 1}")
        pipe.hset(self.key("run", generation_id), "done", "1")
        pipe.expire(stream, keep)
        pipe.expire(self.key("run", generation_id), keep)
        pipe.expire(self.key("run", generation_id, "adopted"), keep)
        pipe.eval(RELEASE, 1, self.key("chat", meta["chat_id"], "run"), generation_id)
        pipe.execute()
        if self.leases is not None:
            self.leases.release(meta["chat_id"], generation_id)
        logger.warning("generation %s was orphaned; its text is kept as a draft", generation_id)
