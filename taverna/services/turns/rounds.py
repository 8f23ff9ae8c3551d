"""Group rounds: the members the scheduler picks answer one after another, each seeing
the replies before its own; a round can be read back and stopped from any process."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from typing import Protocol

from taverna.errors import NotFound, TavernaError
from taverna.model.chat import NodeRole, new_id
from taverna.services.chats.service import ChatService
from taverna.services.kept_bytes import text_bytes
from taverna.services.plugins import Event, EventBus, EventName
from taverna.services.turns.paths import PathEnds
from taverna.services.turns.runs import (
    Ending,
    GenerationRegistry,
    GroupRound,
    RunningGeneration,
    run_bytes,
)
from taverna.services.turns.speakers import round_speakers

logger = logging.getLogger(__name__)

# The bytes of finished group rounds kept for the page to read (the oldest go first): a
# round holds its speakers' runs, and so their events.
ROUNDS_BYTES = 8 << 20


def round_bytes(found: GroupRound) -> int:
    """About what a round holds: its names and its speakers' runs."""
    names = text_bytes([found.id, found.chat_id, *found.speakers])
    return names + sum(run_bytes(run) for run in found.runs)


class Send(Protocol):
    """How a round has a member answer: `GenerationService.send`."""

    def __call__(
        self,
        chat_id: str,
        text: str,
        *,
        connection: str | None = None,
        revision: int | None = None,
        member: str | None = None,
    ) -> Awaitable[RunningGeneration]: ...


class GroupRounds:
    """The group rounds of this process, by id (finished ones kept for a while)."""

    def __init__(
        self,
        chats: ChatService,
        paths: PathEnds,
        events: EventBus,
        registry: GenerationRegistry,
        *,
        send: Send,
        stop: Callable[[str], Awaitable[object]],
        reader: Executor,
        writer: Executor,
    ) -> None:
        """`send` starts a member's reply and `stop` stops a generation; `reader` is the
        thread the speakers are chosen on, `writer` the one a message is written on."""
        self.chats = chats
        self.store = chats.store
        self.paths = paths
        self.events = events
        self.registry = registry
        self.send = send
        self.stop = stop
        self.reader = reader
        self.writer = writer
        self.rounds: dict[str, GroupRound] = {}
        # the bytes of each finished round, measured once it has finished
        self._sizes: dict[str, int] = {}

    async def open_round(
        self,
        chat_id: str,
        text: str,
        *,
        connection: str | None,
        revision: int | None,
        member: str | None,
        user_input: bool,
        started: Callable[[RunningGeneration], object] | None,
    ) -> GroupRound:
        """See `GenerationService.round`."""
        loop = asyncio.get_running_loop()
        speakers: tuple[str, ...] = (member,) if member else ()
        if not speakers:
            speakers = await loop.run_in_executor(
                self.reader, self._speakers, chat_id, text, user_input
            )
        found = GroupRound(
            new_id(), chat_id, speakers, started=started, changed=self.registry.round_changed
        )
        self._remember(found)
        if not speakers:
            # nobody answers (the manual strategy): the message is just posted
            if text.strip():
                await loop.run_in_executor(self.writer, self._post, chat_id, text, revision)
            found.finish()
            return found
        try:
            await self._drafted(chat_id, speakers[0])
            first = await self.send(
                chat_id, text, connection=connection, revision=revision, member=speakers[0]
            )
        except BaseException:
            found.finish()  # refused (a busy chat, a used-up quota): the round is over
            raise
        found.add(first)
        found.task = asyncio.create_task(
            self._rest_of_round(found, connection), name=f"round {found.id}"
        )
        return found

    def _speakers(self, chat_id: str, text: str, user_input: bool) -> tuple[str, ...]:
        chat = self.store.get_chat(chat_id)
        return round_speakers(self.chats, self.paths, chat, text, user_input)

    def _remember(self, found: GroupRound) -> None:
        self.rounds[found.id] = found
        self.registry.round_changed(found)
        # finished rounds are kept for a page that asks after them, in bounded bytes
        finished = [k for k, r in self.rounds.items() if r.done]
        for key in finished:
            if key not in self._sizes:
                self._sizes[key] = round_bytes(self.rounds[key])
        held = sum(self._sizes[key] for key in finished)
        for key in finished:  # the oldest first
            if held <= ROUNDS_BYTES:
                break
            held -= self._sizes.pop(key)
            del self.rounds[key]

    @property
    def finished_held(self) -> int:
        """The bytes of the finished rounds kept (as of the last start)."""
        return sum(self._sizes.get(k, 0) for k, r in self.rounds.items() if r.done)

    def _post(self, chat_id: str, text: str, revision: int | None) -> None:
        chat = self.chats.get_chat(chat_id)
        self.chats.append(
            chat_id,
            NodeRole.USER,
            text,
            revision=chat.revision if revision is None else revision,
            speaker=chat.user_name,
        )

    async def _drafted(self, chat_id: str, member: str) -> None:
        """Announce that `member` writes next in a group round; what listens (the Quick
        Replies run on a member's draft) is done before the member's prompt is built."""

        def announce() -> None:
            if self.store.get_chat(chat_id).group_id:  # only a group's members are drafted
                event = Event(EventName.GROUP_MEMBER_DRAFTED, chat_id, detail={"member": member})
                self.events.emit(event)

        await asyncio.to_thread(announce)

    async def _rest_of_round(self, found: GroupRound, connection: str | None) -> None:
        try:
            for speaker in found.speakers[1:]:
                run = found.runs[-1]
                if run.task is not None:
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await run.task
                result = run.result
                if found.stopped or result is None or result.outcome is not Ending.SAVED:
                    break
                try:
                    await self._drafted(found.chat_id, speaker)
                    found.add(
                        await self.send(found.chat_id, "", connection=connection, member=speaker)
                    )
                except TavernaError:
                    logger.info("round %s ended: the next speaker could not start", found.id)
                    break
            last = found.runs[-1]
            if last.task is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await last.task
        finally:
            found.finish()

    def round_by_id(self, round_id: str) -> GroupRound:
        """A group round of this process, or of another one sharing the registry."""
        found = self.rounds.get(round_id) or self.registry.round(round_id)
        if found is None:
            raise NotFound("no such round", code="no_such_round")
        return found

    async def end_round(self, round_id: str) -> None:
        """End a round: its running generation stops (kept as a draft) and nobody follows."""
        found = self.rounds.get(round_id)
        if found is None:
            shared = self.registry.round(round_id)
            if shared is None:
                raise NotFound("no such round", code="no_such_round")
            await self.registry.stop_round_elsewhere(round_id)  # its process stops it
            current = shared.current
            if current is not None and not current.done:
                with contextlib.suppress(TimeoutError, NotFound):
                    await asyncio.wait_for(current.wait(), 15)
            return
        found.stopped = True
        if found.current is not None:
            await self.stop(found.current.id)
