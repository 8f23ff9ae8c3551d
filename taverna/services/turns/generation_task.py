"""A generation's task: ask the model (over its tool rounds), then have the reply stored,
or keep what streamed as a draft; either way publish its `Completed` and announce it."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Executor
from datetime import datetime
from typing import Any

import aiohttp

from taverna.errors import TavernaError
from taverna.providers.transport import Timeouts
from taverna.services.chats.service import ChatService
from taverna.services.connections.service import ConnectionService
from taverna.services.plugins import Event, EventBus, EventName
from taverna.services.turns import prompt_fit
from taverna.services.turns.drafts import Drafts, journal_entry
from taverna.services.turns.kinds import ANSWERS
from taverna.services.turns.plan import Plan
from taverna.services.turns.records import generation_info, reply_record, store_reply
from taverna.services.turns.runs import Completed, Ending, RunningGeneration
from taverna.services.turns.tool_rounds import Heard, converse

logger = logging.getLogger(__name__)


class GenerationTasks:
    """Runs planned generations to their end and tells the bus how each ended."""

    def __init__(
        self,
        chats: ChatService,
        connections: ConnectionService,
        drafts: Drafts,
        events: EventBus,
        *,
        client: Callable[[], aiohttp.ClientSession | None],
        timeouts: Timeouts,
        clock: Callable[[], datetime],
        writer: Executor,
        after_reply: list[Callable[[str], Awaitable[object]]],
        follow_ups: dict[str, asyncio.Task[None]],
    ) -> None:
        """`client`: the session model requests go through (None: one of their own);
        `writer`: the thread replies are stored on; `after_reply`: hooks run after a
        reply is saved, whose newest task per chat `follow_ups` holds while it runs."""
        self.chats = chats
        self.connections = connections
        self.drafts = drafts
        self.events = events
        self.client = client
        self.timeouts = timeouts
        self.clock = clock
        self.writer = writer
        self.after_reply = after_reply
        self.follow_ups = follow_ups

    async def run_generation(self, plan: Plan) -> Completed:
        """The generation's task: never ends without publishing a `Completed`."""
        try:
            done = await self._generate(plan)
            if done.outcome is Ending.SAVED and self.after_reply:
                self._follow(plan.chat.id)
            return done
        except asyncio.CancelledError:
            if not plan.run.done:  # stopped before the stream began, or while saving
                self._fail(plan, plan.run.text, "stopped", Ending.STOPPED)
            raise
        except Exception as exc:
            # a bug must not leave followers waiting forever; the person sees what failed
            logger.exception("generation %s failed unexpectedly", plan.run.id)
            if plan.run.done:
                raise
            message = f"unexpected error: {type(exc).__name__}: {exc}"
            return self._fail(plan, plan.run.text, message, Ending.FAILED)

    def _follow(self, chat_id: str) -> None:
        task = self.follow_ups[chat_id] = asyncio.create_task(self._follow_up(chat_id))
        # a finished one is let go: a server sees thousands of chats
        task.add_done_callback(
            lambda ended: (
                self.follow_ups.pop(chat_id, None)
                if self.follow_ups.get(chat_id) is ended
                else None
            )
        )

    async def _follow_up(self, chat_id: str) -> None:
        for hook in self.after_reply:
            try:
                await hook(chat_id)
            except Exception:  # a failed follow-up never touches the reply
                logger.exception("after-reply hook for chat %s failed", chat_id)

    async def _generate(self, plan: Plan) -> Completed:
        started = self.clock()
        started_clock = time.perf_counter()
        refused = await self._refused(plan)
        if refused is not None:
            return refused
        heard = Heard()
        try:
            await converse(
                plan,
                heard,
                self.connections.of(plan.chat.owner),
                client=self.client(),
                timeouts=self.timeouts,
            )
        except asyncio.CancelledError:
            self._fail(plan, heard.text, "stopped", Ending.STOPPED)
            raise
        except TavernaError as exc:
            await self._posted(plan)
            return self._fail(plan, heard.text, exc.message, Ending.FAILED)
        if heard.error is not None:
            await self._posted(plan)
            cause = heard.error.kind.value
            return self._fail(plan, heard.text, heard.error.message, Ending.FAILED, cause=cause)
        info = generation_info(plan, heard, started, started_clock, self.clock())
        record = reply_record(plan, "".join(heard.reply), info, self.clock())
        return await self._settle(plan, record, heard.text)

    @staticmethod
    async def _posted(plan: Plan) -> None:
        """Wait for the person's message to be stored (its run's events say so before the
        run's end), as SillyTavern keeps the message of a failed reply."""
        if plan.posted is not None:
            await plan.posted

    async def _refused(self, plan: Plan) -> Completed | None:
        """The end of a generation that sends nothing: an interceptor aborted it, or its
        prompt is too big for the model, which could only refuse it (and again on a retry)."""
        if plan.aborted is not None:
            if plan.posted is not None:
                await plan.posted  # the person's message is kept, as SillyTavern keeps it
            return self._fail(plan, "", plan.aborted.message, Ending.FAILED, cause="aborted")
        too_big = prompt_fit.overflow(plan.prompt)
        if too_big is None:
            return None
        if plan.posted is not None:
            await plan.posted
        message = too_big.message(plan.connection.name, prompt_fit.local_context(plan.connection))
        return self._fail(plan, "", message, Ending.FAILED, cause=prompt_fit.CAUSE)

    async def _settle(self, plan: Plan, record: dict[str, Any], streamed: str) -> Completed:
        """Store the reply (after the message it answers); while the database is away it
        waits in the journal."""
        if plan.members and not record["text"] and plan.kind in ANSWERS:
            # nothing of the speaker's was left: told, never stored as an empty message
            if plan.posted is not None:
                await plan.posted
            speaker = record["speaker"]
            message = f"the model returned nothing for {speaker} (or only other members' lines)"
            return self._fail(plan, streamed, message, Ending.FAILED, cause="empty_reply")
        try:
            # the message this replies to is stored first; the reply is written at the
            # revision it left (or the plan's), without reading the chat again
            seen = plan.chat.revision if plan.posted is None else await plan.posted
            return self._finish(plan, await self._save(plan, {**record, "revision": seen}))
        except TavernaError as exc:
            return self._fail(plan, streamed, f"could not save: {exc.message}", Ending.FAILED)
        except Exception as exc:  # the database is away: the reply waits in the journal
            logger.exception("generation %s could not be saved", plan.run.id)
            reason = f"could not save: {type(exc).__name__}: {exc}"
            if journal_entry(self.drafts.journal, "reply", record):
                return self._finish(plan, Completed(Ending.SAVING, record["text"], error=reason))
            return self._fail(plan, streamed, reason, Ending.FAILED)

    async def _save(self, plan: Plan, record: Mapping[str, Any]) -> Completed:
        """Store the result on the reply writer's thread, off the event loop (a write's tens of
        statements would hold up every other stream's events and first token). A Stop
        that comes while it is being written waits for it: the reply is stored, and says so."""
        loop = asyncio.get_running_loop()
        stored = loop.run_in_executor(self.writer, store_reply, record, self.chats, self.drafts)
        try:
            return await asyncio.shield(stored)
        except asyncio.CancelledError:
            self._finish(plan, await stored)
            raise

    def _fail(
        self, plan: Plan, text: str, error: str, outcome: Ending, *, cause: str | None = None
    ) -> Completed:
        """End a generation that stored nothing: what streamed is kept as a draft if it
        can be; the generation ends either way, so the chat is free again."""
        try:
            draft_id = self.drafts.keep_streamed(plan, text, error, cause)
        except Exception as exc:
            logger.exception("the draft of generation %s could not be kept", plan.run.id)
            draft_id = None
            error = f"{error}; its text could not be kept as a draft: {type(exc).__name__}"
        done = Completed(outcome, text, draft_id=draft_id, error=error, cause=cause)
        return self._finish(plan, done)

    def _finish(self, plan: Plan, done: Completed) -> Completed:
        plan.run.publish(done)
        self.announce_end(plan.run, done)
        return done

    def announce_end(self, run: RunningGeneration, done: Completed) -> None:
        """`generation_stopped` for a stop, else `generation_ended` (saved or failed)."""
        stopped = done.outcome is Ending.STOPPED
        self.events.emit(
            Event(
                EventName.GENERATION_STOPPED if stopped else EventName.GENERATION_ENDED,
                run.chat_id,
                done.node_id,
                done.text,
                kind=run.kind.value,
                detail={
                    "generation_id": run.id,
                    "outcome": done.outcome.value,
                    **({"error": done.error} if done.error else {}),
                },
            )
        )
