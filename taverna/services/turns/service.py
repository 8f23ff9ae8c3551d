"""The generation service: starts a generation, streams it from the model, and has its
result stored (see the package docstring).

Every start is one path, the kind being data (`kinds`): the path's end is read, the
kind's chooser picks what the generation answers, the plan is made (`planning`), and
the generation runs as a task of its own (`generation_task`). Group rounds (`rounds`),
drafts (`drafts`), the journal of replies the database could not take
(`journal_keeper`), the turns' prompts (`turn_prompts`) and the count of typed tokens
(`token_count`) are collaborators this service holds."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, TypedDict, Unpack

import aiohttp

from taverna.engine.assembly.context import GenerationType
from taverna.engine.tokens.cache import CountCache
from taverna.errors import Conflict, NotFound, TavernaError
from taverna.model.chat import Chat, Node, new_id
from taverna.model.prompt import Prompt
from taverna.providers.request import Api
from taverna.providers.transport import ModelSessions, Timeouts
from taverna.services.chats.service import ChatService, WriteResult
from taverna.services.connections.service import ConnectionService
from taverna.services.plugins import Event, EventBus, EventName
from taverna.services.plugins.tools import ToolRegistry, default_tools
from taverna.services.turns.build_queue import BuildQueue
from taverna.services.turns.chat_connection import connection_for
from taverna.services.turns.drafts import Drafts
from taverna.services.turns.generation_task import GenerationTasks
from taverna.services.turns.journal import ReplyJournal
from taverna.services.turns.journal_keeper import JOURNAL_EVERY, JournalKeeper
from taverna.services.turns.paths import PathEnds
from taverna.services.turns.plan import Plan
from taverna.services.turns.planning import Ask, Planner, asked
from taverna.services.turns.rounds import GroupRounds
from taverna.services.turns.runs import (
    Completed,
    Draft,
    Ending,
    GenerationRegistry,
    GroupRound,
    Posted,
    Queued,
    RecentPrompts,
    RunningGeneration,
    Started,
)
from taverna.services.turns.token_count import TokenCount, count_typed
from taverna.services.turns.tool_rounds import UserTools
from taverna.services.turns.turn import PromptBuilder
from taverna.services.turns.turn_prompts import TurnPrompts
from taverna.store.repository import Store

# Loop turns a generation's task gets to send its request before its message is written.
_YIELDS_BEFORE_WRITE = 4


def _utcnow() -> datetime:
    return datetime.now(UTC)


class How(TypedDict, total=False):
    """How a regenerate, swipe, continue or impersonate is asked for (see `Ask`)."""

    connection: str | None
    revision: int | None
    member: str | None


class GenerationService:
    """Runs generations for chats and writes their results into the tree."""

    def __init__(
        self,
        store: Store,
        connections: ConnectionService,
        build_prompt: PromptBuilder,
        *,
        chats: ChatService | None = None,
        tools: ToolRegistry | None = None,
        registry: GenerationRegistry | None = None,
        timeouts: Timeouts | None = None,
        clock: Callable[[], datetime] = _utcnow,
        owner: str = "",
        http: aiohttp.ClientSession | None = None,
        counts: CountCache | None = None,
        paths: PathEnds | None = None,
        events: EventBus | None = None,
        user_tools: UserTools | None = None,
        journal: ReplyJournal | None = None,
    ) -> None:
        """`http`: a session to reuse across generations (kept-alive connections, no new TLS
        handshake per reply); it must belong to the event loop the generations run in.
        Without one, the session `sessions` opened for the running loop is used, and
        without that each generation opens and closes its own. `counts`: the token-count
        cache every prompt builder call gets (bounded; one is made when not given).
        `paths`: the path ends kept between turns (share the prompt builder's).
        `events`: the bus generations are announced on and intercepted through (the chat
        service's by default). `user_tools`: the tools a chat offers besides the
        process's (Quick Reply tools, plugins' tools), offered when the preset turns
        function calling on. `journal`: where a finished reply the database cannot take
        waits on local disk until it can (see `journal`)."""
        self.paths = paths if paths is not None else PathEnds(store)
        self.http = http
        self.sessions = ModelSessions()
        self.counts = counts if counts is not None else CountCache()
        self.store = store
        self.chats = chats or ChatService(store, clock=clock)
        self.connections = connections
        self.events = events if events is not None else self.chats.events
        self.registry = registry if registry is not None else GenerationRegistry()
        self.timeouts = timeouts or Timeouts()
        self.clock = clock
        self.owner = owner
        self.last_prompts = RecentPrompts()
        self.journal = journal
        # A cold build of a long chat takes most of a second: it runs on this one
        # thread so the event loop keeps answering (one thread: the builds share the
        # token-count cache); the store gives each read its own pooled connection.
        self._builder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="prompt-build")
        # The person's message is written here while its prompt is built.
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chat-write")
        # Replies are stored on a thread of their own: a person's message, which the
        # first token waits for, never queues behind other chats' finished replies.
        self._reply_writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reply-write")
        self._starting: set[str] = set()  # chats whose prompt is being built
        # Builds wait their turn here, fair between accounts.
        self.build_queue = BuildQueue(self._builder)
        self._waiting_starts: dict[str, asyncio.Task[RunningGeneration]] = {}
        # Hooks run after a reply is saved (the automatic summary), each as a task of its
        # own: the reply is done and shown whatever they do. `follow_ups` holds the
        # newest task per chat while it runs, so a caller can wait for it.
        self.after_reply: list[Callable[[str], Awaitable[object]]] = []
        self.follow_ups: dict[str, asyncio.Task[None]] = {}
        tools = tools if tools is not None else default_tools()
        self._hold_collaborators(build_prompt, tools, user_tools)
        self.registry.bind(
            stop=self.stop,
            orphan=self.keep_orphan,
            stop_round=self.stop_round,
        )

    def _hold_collaborators(
        self, build_prompt: PromptBuilder, tools: ToolRegistry, user_tools: UserTools | None
    ) -> None:
        """Make the parts a generation goes through, each over this service's state."""
        self.prompts = TurnPrompts(self.store, self.paths, build_prompt, self.events, self.counts)
        # Turns and their prompts as generations build them (the inspector, quiet
        # generations and summaries build theirs so too).
        self.turn = self.prompts.turn
        self.build_serialized = self.prompts.build_serialized
        self.prompt_to_send = self.prompts.prompt_to_send
        self.planner = Planner(
            self.chats,
            self.connections,
            self.prompts,
            tools,
            user_tools=user_tools,
            clock=self.clock,
        )
        self.kept_drafts = Drafts(
            self.store, self.chats, clock=self.clock, owner=self.owner, journal=self.journal
        )
        self.journal_keeper = JournalKeeper(
            self.journal, self.chats, self.kept_drafts, self._reply_writer
        )
        self.tasks = GenerationTasks(
            self.chats,
            self.connections,
            self.kept_drafts,
            self.events,
            client=self.model_client,
            timeouts=self.timeouts,
            clock=self.clock,
            writer=self._reply_writer,
            after_reply=self.after_reply,
            follow_ups=self.follow_ups,
        )
        self.group_rounds = GroupRounds(
            self.chats,
            self.paths,
            self.events,
            self.registry,
            send=self.send,
            stop=self.stop,
            reader=self._builder,
            writer=self._writer,
        )
        self.rounds: dict[str, GroupRound] = self.group_rounds.rounds  # by id

    @property
    def build_prompt(self) -> PromptBuilder:
        """What builds a turn's prompt: the assembly engine, or any callable of its shape."""
        return self.prompts.build_prompt

    @build_prompt.setter
    def build_prompt(self, build: PromptBuilder) -> None:
        self.prompts.build_prompt = build

    @property
    def tools(self) -> ToolRegistry:
        """The process's tools, which a model may call when the preset offers them."""
        return self.planner.tools

    @tools.setter
    def tools(self, tools: ToolRegistry) -> None:
        self.planner.tools = tools

    # ------------------------------------------------------------ start methods

    async def send(
        self,
        chat_id: str,
        text: str,
        *,
        connection: str | None = None,
        speaker: str = "",
        revision: int | None = None,
        member: str | None = None,
        image: str | None = None,
    ) -> RunningGeneration:
        """Post the person's message (if any text or a picture) and generate the reply to it.

        `image`: a stored picture's URL (`ImageLibrary.save`), attached to the message.

        `member`: in a group chat, the member who answers (else the group's scheduler
        picks the first of the round).

        The message is written while the prompt is built with it (both take milliseconds;
        a write waits for the disk): the request goes out once both are done, so the
        model never answers a message the tree does not hold.
        """
        ask = asked(
            "normal",
            text=text,
            image=image,
            speaker=speaker,
            connection=connection,
            revision=revision,
            member=member,
        )
        return await self.generate(chat_id, ask)

    async def regenerate(self, chat_id: str, **how: Unpack[How]) -> RunningGeneration:
        """A new reply in place of the last one (the old one is deleted, restorably)."""
        return await self.generate(chat_id, Ask(GenerationType.REGENERATE, **how))

    async def swipe(self, chat_id: str, **how: Unpack[How]) -> RunningGeneration:
        """A new candidate beside the last reply; the current one is left out of the prompt."""
        return await self.generate(chat_id, Ask(GenerationType.SWIPE, **how))

    async def continue_reply(self, chat_id: str, **how: Unpack[How]) -> RunningGeneration:
        """Extend the last message (prefill where the API allows, else a continue nudge)."""
        return await self.generate(chat_id, Ask(GenerationType.CONTINUE, **how))

    async def impersonate(self, chat_id: str, **how: Unpack[How]) -> RunningGeneration:
        """Draft the person's next message; nothing is written into the tree."""
        return await self.generate(chat_id, Ask(GenerationType.IMPERSONATE, **how))

    async def generate(self, chat_id: str, ask: Ask) -> RunningGeneration:
        """Start a generation of the kind `ask` names: on the builder's thread, in one hop,
        read the path's end, choose what the generation answers (or take the person's
        message and answer it), build the prompt; then run it as a task of its own. The
        run's `changed_below` names the message under which the chat changes.

        A sent message is written while the model's request goes out (the write waits
        on the disk, the request on the network); the start returns once it is stored,
        a failed write stops the generation, and a reply is stored only after its message.

        When other builds go first (`BuildQueue`), the start returns at once with the
        run waiting: its events say how many builds are ahead (`Queued`), then that it
        started, that the message is stored (`Posted`), or why it could not start."""
        if ask.said is not None and ask.said.text.strip():
            # recall embeds the message beside the prompt's build
            self.prompts.foresee(chat_id, ask.said.speaker, ask.said.text)
        self._refuse_if_busy(chat_id)
        self._starting.add(chat_id)
        run = RunningGeneration(new_id(), chat_id, ask.kind)
        waits = asyncio.Event()
        start = asyncio.create_task(self._start(run, ask, waits), name=f"start {run.id}")
        waiting = asyncio.create_task(waits.wait())
        try:
            await asyncio.wait({start, waiting}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiting.cancel()
        if start.done():
            return start.result()  # started, or refused: the caller is told
        # It waits its turn: followed through the registry meanwhile (a failure to start
        # is its last event).
        run.draft_info = {"owner": ask.account}
        try:
            self._list(run)
        except BaseException:
            start.cancel()
            raise
        self._waiting_starts[run.id] = start
        start.add_done_callback(lambda _: self._waiting_starts.pop(run.id, None))
        return run

    async def _start(
        self, run: RunningGeneration, ask: Ask, waits: asyncio.Event
    ) -> RunningGeneration:
        """Build the run's plan when its turn comes, launch it, and post its message."""

        def told(ahead: int) -> None:
            run.queued = ahead
            run.publish(Queued(ahead))
            waits.set()

        try:
            work = functools.partial(self.planner.plan_generation, run.chat_id, ask, run)
            plan, message = await self.build_queue.run(ask.account, work, told=told)
            run.queued = None
            if message is not None:
                plan.posted = asyncio.get_running_loop().create_future()
            self._launch(plan)
            if message is not None:
                await self._post_while_asking(plan, message)
            return run
        except BaseException as exc:
            if waits.is_set() and not run.done:
                # the start was answered already: its failure ends the run
                run.queued = None
                error = exc.message if isinstance(exc, TavernaError) else "stopped"
                code = exc.code if isinstance(exc, TavernaError) else None
                run.publish(Completed(Ending.FAILED, "", error=error, cause=code or "not_started"))
            if waits.is_set() and not isinstance(exc, asyncio.CancelledError):
                return run  # told through the run's events; nobody waits for this
            raise
        finally:
            self._starting.discard(run.chat_id)

    def _list(self, run: RunningGeneration) -> None:
        """Put the run in the registry, once."""
        if not run.listed:
            self.registry.add(run)
            run.listed = True

    def _launch(self, plan: Plan) -> None:
        """Register the planned generation, tell of its start, and start its task."""
        run, anchor_id = plan.run, plan.anchor_id
        run.draft_info = {
            "anchor_id": anchor_id,
            # the chat's account: whichever process adopts the run if this one dies
            # keeps its draft for the owner, whose chat lists it
            "owner": plan.chat.owner,
            "continued_stripped": "1" if plan.continued_stripped else "",
        }
        self._list(run)
        self.last_prompts.put(run.chat_id, plan.prompt)
        run.publish(Started(run.id, run.chat_id, plan.kind, anchor_id))
        self.events.emit(
            Event(
                EventName.GENERATION_STARTED,
                run.chat_id,
                anchor_id,
                kind=plan.kind.value,
                detail={"generation_id": run.id},
            )
        )
        run.task = asyncio.create_task(self.tasks.run_generation(plan), name=f"generation {run.id}")

    async def _post_while_asking(self, plan: Plan, message: Node) -> None:
        """Write the person's message while the generation's request goes out; a failed
        write stops the generation (its error is raised)."""
        assert plan.posted is not None and plan.run.task is not None
        # Let the request start out first: the write's Python work would hold the
        # interpreter while the request waits to be sent.
        for _ in range(_YIELDS_BEFORE_WRITE):
            await asyncio.sleep(0)
        loop = asyncio.get_running_loop()
        try:
            revision = await loop.run_in_executor(self._writer, self._post, plan.chat, message)
        except Exception:
            plan.posted.cancel()
            plan.run.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await plan.run.task
            raise
        if not plan.run.done:  # (a stop before the write ended it: nothing follows its end)
            plan.run.publish(Posted(message.id, revision))
        plan.posted.set_result(revision)

    def _post(self, chat: Chat, message: Node) -> int:
        """Store the person's message; the chat's revision with it."""
        # The revision the prompt was built at: a change since then is a conflict.
        return self.chats.append(
            chat.id,
            message.role,
            message.content,
            revision=chat.revision,
            speaker=message.speaker,
            extras=message.extras or None,
            node_id=message.id,
            created=message.created,
        ).chat.revision

    def _refuse_if_busy(self, chat_id: str) -> None:
        if chat_id in self._starting or self.registry.for_chat(chat_id, running_only=True):
            raise Conflict(
                "a generation is already running in this chat; stop it first",
                code="generation_running",
            )

    # ------------------------------------------------------------ rounds and stops

    async def round(
        self,
        chat_id: str,
        text: str,
        *,
        connection: str | None = None,
        revision: int | None = None,
        member: str | None = None,
        user_input: bool = True,
        started: Callable[[RunningGeneration], object] | None = None,
    ) -> GroupRound:
        """A group chat's round: post the person's message (if any text), then have each
        member the scheduler picks (or `member`) answer in turn, each seeing the replies
        before its own. The first generation has started when this returns; the others
        follow as each is saved. Stopping the running generation ends the round.
        `user_input`: false for a round nobody typed for (auto mode); `started` is
        called with each speaker's generation as it starts."""
        return await self.group_rounds.open_round(
            chat_id,
            text,
            connection=connection,
            revision=revision,
            member=member,
            user_input=user_input,
            started=started,
        )

    def round_state(self, round_id: str) -> GroupRound:
        """A group round of this process, or of another one sharing the registry."""
        return self.group_rounds.round_by_id(round_id)

    async def stop_round(self, round_id: str) -> None:
        """End a round: its running generation stops (kept as a draft) and nobody follows."""
        await self.group_rounds.end_round(round_id)

    async def stop(self, generation_id: str) -> Completed | None:
        """Stop a generation: the model connection is closed, what streamed becomes a draft."""
        run = self.registry.get(generation_id)
        if run.remote:
            return await self.registry.stop_elsewhere(run)  # another process runs it
        if run.task is not None and not run.done:
            run.task.cancel()
            # However the task ended, it is over: its failure is its Completed event.
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await run.task
        if not run.done:  # a task that ended without its last event frees the chat anyway
            done = Completed(Ending.STOPPED, run.text, error="stopped")
            run.publish(done)
            self.tasks.announce_end(run, done)
        return run.result

    # ------------------------------------------------------------ prompts

    def preview(self, chat_id: str, *, connection: str | None = None) -> Prompt:
        """The prompt the next reply would be sent (a dry run: nothing is sent or written)."""
        chat = self.store.get_chat(chat_id)
        api = connection_for(self.connections.of(chat.owner), chat, connection).api
        return self.prompts.dry_run_prompt(chat_id, api)

    def count_tokens(self, chat_id: str, text: str, *, connection: str | None = None) -> TokenCount:
        """The tokens of `text` (what is being typed) with the tokenizer the chat's next
        prompt is counted with, and that prompt's total (a dry run: nothing is written)."""
        return count_typed(self.prompts, self.connections, chat_id, text, connection)

    def model_client(self) -> aiohttp.ClientSession | None:
        """The session model requests go through in the running loop, if one is kept."""
        return self.http or self.sessions.current()

    def warm(self, chat_id: str) -> None:
        """Build (and throw away) a chat's next prompt, so its lorebooks are parsed and
        compiled, its tokenizer loaded and its path's end read before anyone asks."""
        chat = self.store.get_chat(chat_id)
        try:
            api = connection_for(self.connections.of(chat.owner), chat).api
        except NotFound:
            api = Api.OPENAI
        self.prompts.dry_run_prompt(chat_id, api)

    # ------------------------------------------------------------ drafts and the journal

    def drafts(self, chat_id: str) -> list[Draft]:
        """The chat's drafts, oldest first."""
        return self.kept_drafts.of_chat(chat_id)

    def keep_draft(self, draft_id: str, *, revision: int | None = None) -> WriteResult:
        """Store a draft where its generation would have put it, then forget the draft
        (see `Drafts.store_draft`)."""
        return self.kept_drafts.store_draft(draft_id, revision=revision)

    def drop_draft(self, draft_id: str) -> None:
        """Forget a draft."""
        self.kept_drafts.forget_draft(draft_id)

    def keep_orphan(self, meta: Mapping[str, str], text: str) -> str | None:
        """Keep the text of a generation whose process died as a draft (see
        `Drafts.keep_orphaned`)."""
        return self.kept_drafts.keep_orphaned(meta, text)

    @property
    def on_moved(self) -> Callable[[str], None] | None:
        """Told of each chat a journalled reply was moved into (its backup is written)."""
        return self.journal_keeper.on_moved

    @on_moved.setter
    def on_moved(self, told: Callable[[str], None] | None) -> None:
        self.journal_keeper.on_moved = told

    def replay_journal(self) -> tuple[int, int]:
        """Move what waits in the journal into the database: how many entries were
        moved and how many wait still. Run on the reply writer's thread."""
        return self.journal_keeper.move_waiting()

    def waiting(self, chat_id: str) -> list[dict[str, Any]]:
        """A chat's replies and drafts that wait in the journal for the database, after
        one more try to move them there (the caller has just read the database)."""
        return self.journal_keeper.waiting_for(chat_id)

    async def keep_journal(self, every: float = JOURNAL_EVERY) -> None:
        """Replay the journal now and every `every` seconds while anything waits there."""
        await self.journal_keeper.keep_moving(every)
