"""The generation service: starts a generation, streams it from the model, and has its
result stored (see the package docstring)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import aiohttp

from taverna.engine.assembly.context import GenerationType
from taverna.engine.group import clean_group_reply
from taverna.engine.tokens.cache import CountCache
from taverna.engine.tokens.registry import get_tokenizer
from taverna.errors import Conflict, NotFound, StaleRevision, TavernaError
from taverna.model.chat import Chat, GenerationInfo, Node, NodeRole, PathTail, new_id
from taverna.model.prompt import Prompt, PromptMessage, Role
from taverna.providers.builders import build_request, stream_parser
from taverna.providers.events import (
    Finish,
    FinishReason,
    ReasoningDelta,
    StreamError,
    TextDelta,
    ToolCall,
    Usage,
)
from taverna.providers.registry import provider
from taverna.providers.request import Api, PostProcessing, RequestOptions
from taverna.providers.transport import ModelSessions, Timeouts
from taverna.services.chats.generated_reply import ToolStep
from taverna.services.chats.groups import POOL_WINDOW_PER_MEMBER, GroupService, speakers_for
from taverna.services.chats.images import ImageLibrary, with_image
from taverna.services.chats.service import ChatService, WriteResult
from taverna.services.connections.service import Connection, ConnectionService
from taverna.services.library.active_settings import write_global_variables
from taverna.services.plugins import Event, EventBus, EventName, GenerationAborted
from taverna.services.plugins.tools import Tool, ToolRegistry, default_tools
from taverna.services.turns import prompt_fit
from taverna.services.turns.chat_connection import connection_for
from taverna.services.turns.journal import ReplyJournal, Unsettled
from taverna.services.turns.paths import PathEnds
from taverna.services.turns.reply_text import trim_at_stop
from taverna.services.turns.runs import (
    Completed,
    Draft,
    Ending,
    GenerationRegistry,
    GroupRound,
    RecentPrompts,
    RunningGeneration,
    Started,
    ToolResult,
)
from taverna.services.turns.turn import WHOLE_PATH, PreparedTurn, PromptBuilder, TurnRequest
from taverna.store.repository import Store

logger = logging.getLogger(__name__)

# Finished group rounds kept for the page to read (the oldest go first).
ROUNDS_KEPT = 256

DRAFT_KIND = "draft"
# algo-providers.md §12 [newer]: at most five tool rounds, then a plain answer is required
MAX_TOOL_ROUNDS = 5
# Loop turns a generation's task gets to send its request before its message is written.
_YIELDS_BEFORE_WRITE = 4
# Seconds between two looks at the journal of replies the database could not take.
JOURNAL_EVERY = 3.0
# The kinds of generation a group member answers with (an empty one is told, not stored).
_ANSWERS = (GenerationType.NORMAL, GenerationType.REGENERATE, GenerationType.SWIPE)
# What a draft document holds.
_DRAFT_DATA = (
    "chat_id",
    "kind",
    "anchor_id",
    "text",
    "reason",
    "cause",
    "continued_stripped",
    "generation_id",
    "created",
)


# -------------------------------------------------------------- the service


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class _Plan:
    """Everything one generation needs, decided before it starts."""

    run: RunningGeneration
    chat: Chat
    connection: Connection
    kind: GenerationType
    anchor: Node | None  # the node replied to, replaced, or continued
    prompt: Prompt
    tools: tuple[str, ...]
    request: Mapping[str, Any] = field(default_factory=dict)
    continued_text: str = ""
    # the API continued the message with its trailing whitespace cut (Anthropic's prefill)
    continued_stripped: bool = False
    tool_steps: list[tuple[str, ToolCall, str]] = field(default_factory=list)
    # the tools this generation can run: the process's, and the chat's own user tools
    registry: ToolRegistry | None = None
    # an interceptor stopped it before anything was sent
    aborted: GenerationAborted | None = None
    # the chat variables the prompt was built over, when user tools (scripts) may change
    # them, and the copy the tools' scripts change (the reply records the changes)
    base_variables: Mapping[str, Any] | None = None
    tool_variables: Mapping[str, Any] | None = None
    # The person's message being written while the model is asked (a send): the reply
    # is stored only once it is.
    posted: asyncio.Future[None] | None = None
    # who speaks: the character, or in a group chat the member this reply is for
    speaker: str = ""
    members: tuple[str, ...] = ()  # a group chat's members, in the group's order


# What typed text is counted with when a prompt names no tokenizer (a builder of tests').
FALLBACK_TOKENIZER = "cl100k_base"


@dataclass(frozen=True, slots=True)
class TokenCount:
    """What the input box shows: the typed text's tokens and the next prompt's total."""

    text: int
    prompt: int
    tokenizer: str


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
        user_tools: Callable[[Chat, dict[str, Any]], Sequence[Tool]] | None = None,
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
        self.build_prompt = build_prompt
        self.tools = tools if tools is not None else default_tools()
        self.events = events if events is not None else self.chats.events
        self.user_tools = user_tools
        self.registry = registry if registry is not None else GenerationRegistry()
        self.timeouts = timeouts or Timeouts()
        self.clock = clock
        self.owner = owner
        self.last_prompts = RecentPrompts()
        # A cold build of a long chat takes most of a second: it runs on this one
        # thread so the event loop keeps answering. One thread, and the lock, because
        # the builds share the token-count cache, which is not safe to use from two
        # threads at once; the store gives each read its own pooled connection.
        self._builder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="prompt-build")
        # The person's message is written here while its prompt is built.
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chat-write")
        # Replies are stored on a thread of their own: a person's message, which the
        # first token waits for, never queues behind other chats' finished replies.
        self._reply_writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reply-write")
        self._build_lock = threading.Lock()
        self._starting: set[str] = set()  # chats whose prompt is being built
        self.rounds: dict[str, GroupRound] = {}  # group rounds, by id
        # Hooks run after a reply is saved (the automatic summary), each as a task of its
        # own: the reply is done and shown whatever they do. `follow_ups` holds the
        # newest task per chat while it runs, so a caller can wait for it.
        self.after_reply: list[Callable[[str], Awaitable[object]]] = []
        self.follow_ups: dict[str, asyncio.Task[None]] = {}
        self.journal = journal
        # Told of each chat a journalled reply was moved into (its backup is written).
        self.on_moved: Callable[[str], None] | None = None
        self.registry.bind(
            stop=self.stop,
            orphan=self.keep_orphan,
            stop_round=self.stop_round,
        )

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
        if not text.strip() and image is None:

            def choose(end: PathTail) -> tuple[GenerationType, Node | None]:
                return GenerationType.NORMAL, end.nodes[-1] if end.nodes else None

            return await self._begin(chat_id, connection, choose, revision=revision, member=member)
        self._foresee(chat_id, speaker, text)
        return await self._begin(
            chat_id, connection, None, said=(text, speaker, image), revision=revision, member=member
        )

    async def regenerate(
        self,
        chat_id: str,
        *,
        connection: str | None = None,
        revision: int | None = None,
        member: str | None = None,
    ) -> RunningGeneration:
        """A new reply in place of the last one (the old one is deleted, restorably)."""

        def choose(end: PathTail) -> tuple[GenerationType, Node | None]:
            leaf = end.nodes[-1] if end.nodes else None
            if leaf is not None and leaf.role is NodeRole.ASSISTANT and _length(end) > 1:
                return GenerationType.REGENERATE, leaf
            return GenerationType.NORMAL, leaf

        return await self._begin(chat_id, connection, choose, revision=revision, member=member)

    async def swipe(
        self,
        chat_id: str,
        *,
        connection: str | None = None,
        revision: int | None = None,
        member: str | None = None,
    ) -> RunningGeneration:
        """A new candidate beside the last reply; the current one is left out of the prompt."""

        def choose(end: PathTail) -> tuple[GenerationType, Node | None]:
            leaf = end.nodes[-1] if end.nodes else None
            if leaf is None or leaf.role is not NodeRole.ASSISTANT:
                raise TavernaError(
                    "only a reply of the character can be swiped",
                    field="chat",
                    code="swipe_needs_character_reply",
                )
            if _length(end) == 1:
                # algo-chat-ops.md §1.2: a greeting's candidates are its alternate greetings
                raise TavernaError(
                    "the greeting has no generated swipes; pick an alternate greeting",
                    code="greeting_has_no_swipes",
                )
            return GenerationType.SWIPE, leaf

        return await self._begin(chat_id, connection, choose, revision=revision, member=member)

    async def continue_reply(
        self,
        chat_id: str,
        *,
        connection: str | None = None,
        revision: int | None = None,
        member: str | None = None,
    ) -> RunningGeneration:
        """Extend the last message (prefill where the API allows, else a continue nudge)."""

        def choose(end: PathTail) -> tuple[GenerationType, Node | None]:
            if not end.nodes:
                raise TavernaError(
                    "there is nothing to continue",
                    field="chat",
                    code="there_is_nothing_to_continue",
                )
            return GenerationType.CONTINUE, end.nodes[-1]

        return await self._begin(chat_id, connection, choose, revision=revision, member=member)

    async def impersonate(
        self,
        chat_id: str,
        *,
        connection: str | None = None,
        revision: int | None = None,
        member: str | None = None,
    ) -> RunningGeneration:
        """Draft the person's next message; nothing is written into the tree."""

        def choose(end: PathTail) -> tuple[GenerationType, Node | None]:
            return GenerationType.IMPERSONATE, end.nodes[-1] if end.nodes else None

        return await self._begin(chat_id, connection, choose, revision=revision, member=member)

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
        loop = asyncio.get_running_loop()
        speakers: tuple[str, ...] = (member,) if member else ()
        if not speakers:
            speakers = await loop.run_in_executor(
                self._builder, self._round_speakers, chat_id, text, user_input
            )
        found = GroupRound(
            new_id(), chat_id, speakers, started=started, changed=self.registry.round_changed
        )
        self.rounds[found.id] = found
        self.registry.round_changed(found)
        # finished rounds are kept for a page that asks after them, a bounded number
        finished = [k for k, r in self.rounds.items() if r.done]
        while len(self.rounds) > ROUNDS_KEPT and finished:
            del self.rounds[finished.pop(0)]
        if not speakers:
            # nobody answers (the manual strategy): the message is just posted
            if text.strip():
                chat = self.chats.get_chat(chat_id)
                await loop.run_in_executor(
                    self._writer,
                    lambda: self.chats.append(
                        chat_id,
                        NodeRole.USER,
                        text,
                        revision=chat.revision if revision is None else revision,
                        speaker=chat.user_name,
                    ),
                )
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

    async def _drafted(self, chat_id: str, member: str) -> None:
        """Announce that `member` writes next in a group round; what listens (the Quick
        Replies run on a member's draft) is done before the member's prompt is built."""

        def announce() -> None:
            if self.store.get_chat(chat_id).group_id:  # only a group's members are drafted
                event = Event(EventName.GROUP_MEMBER_DRAFTED, chat_id, detail={"member": member})
                self.events.emit(event)

        await asyncio.to_thread(announce)

    def _round_speakers(self, chat_id: str, text: str, user_input: bool) -> tuple[str, ...]:
        chat = self.store.get_chat(chat_id)
        if not chat.group_id:
            return (chat.characters[0].name,) if chat.characters else ()
        groups = GroupService(self.chats, owner=chat.owner)
        group = groups.get(chat.group_id)
        members = groups.members(group, chat)
        want = POOL_WINDOW_PER_MEMBER * max(1, len(members)) + 2
        end = (
            self.paths.tail(chat, chat.active_leaf_id, want)
            if chat.active_leaf_id
            else PathTail((), 0, 0, chat.base_state)
        )
        typed = text if text.strip() else None
        position = end.before + len(end.nodes) + (1 if typed is not None else 0)
        return speakers_for(
            group,
            members,
            chat.id,
            end.nodes,
            position=position,
            user_input=(user_input and typed is not None) or (user_input and not end.nodes),
            text=typed,
        )

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

    def round_state(self, round_id: str) -> GroupRound:
        """A group round of this process, or of another one sharing the registry."""
        found = self.rounds.get(round_id) or self.registry.round(round_id)
        if found is None:
            raise NotFound("no such round", code="no_such_round")
        return found

    async def stop_round(self, round_id: str) -> None:
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
            self._announce(run, done)
        return run.result

    def preview(self, chat_id: str, *, connection: str | None = None) -> Prompt:
        """The prompt the next reply would be sent (a dry run: nothing is sent or written)."""
        chat = self.store.get_chat(chat_id)
        return self._next_prompt(
            chat_id, connection_for(self.connections.of(chat.owner), chat, connection).api
        )

    def count_tokens(self, chat_id: str, text: str, *, connection: str | None = None) -> TokenCount:
        """The tokens of `text` (what is being typed) with the tokenizer the chat's next
        prompt is counted with, and that prompt's total (a dry run: nothing is written)."""
        self._foresee(chat_id, "", text)  # typing has paused: the text may well be sent
        chat = self.store.get_chat(chat_id)
        try:
            chosen: Connection | None = connection_for(
                self.connections.of(chat.owner), chat, connection
            )
        except NotFound:
            if connection is not None:
                raise
            chosen = None  # no connection yet: counted as for OpenAI, as `warm` builds
        turn = self.turn(
            chat,
            chat.active_leaf_id,
            GenerationType.NORMAL,
            chosen.api if chosen else Api.OPENAI,
            dry_run=True,
            model=chosen.model if chosen else "",
            options=chosen.options if chosen else None,
        )
        built = self.build_serialized(turn)
        ledger = (built.prompt if isinstance(built, PreparedTurn) else built).ledger
        name = ledger.tokenizer or FALLBACK_TOKENIZER
        return TokenCount(get_tokenizer(name).count(text), ledger.total_tokens, name)

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
        self._next_prompt(chat_id, api)

    def _next_prompt(self, chat_id: str, api: Api) -> Prompt:
        chat = self.store.get_chat(chat_id)
        return self.prompt_to_send(
            self.turn(chat, chat.active_leaf_id, GenerationType.NORMAL, api, dry_run=True)
        )

    def prompt_to_send(self, turn: TurnRequest) -> Prompt:
        """The prompt a dry-run turn would send, as a generation builds it: over the chat
        copy the interceptors leave and after the prompt handlers (they are told it is a
        dry run). A copy an interceptor would abort is shown as it is, its ledger naming
        who would stop the turn and why: nothing would be sent."""
        aborted: tuple[str, str] | None = None
        try:
            turn = self._intercepted(turn)
        except GenerationAborted as stop:
            aborted = (stop.by, stop.reason)
        built = self.build_serialized(turn)
        prompt = built.prompt if isinstance(built, PreparedTurn) else built
        ready = self.events.prompt_ready(
            prompt, chat_id=turn.chat.id, kind=turn.kind.value, dry_run=True
        )
        if aborted is None:
            return ready
        return replace(ready, ledger=replace(ready.ledger, aborted=aborted))

    def turn(
        self,
        chat: Chat,
        end: str | None,
        kind: GenerationType,
        api: Api,
        *,
        prefill: bool = False,
        dry_run: bool = False,
        pending: Node | None = None,
        model: str = "",
        options: Mapping[str, Any] | None = None,
    ) -> TurnRequest:
        """A turn over the path ending at `end`, read through the kept path ends.

        `pending`: the message `end` names, not yet stored; the path is read to its parent.
        """
        above = pending.parent_id if pending is not None else end

        def read(want: int) -> PathTail:
            if above is None:
                tail = PathTail((), 0, 0, chat.base_state)
            else:
                tail = self.paths.tail(chat, above, want)
            if pending is None:
                return tail
            return PathTail((*tail.nodes, pending), tail.before, tail.visible_before, tail.state)

        return TurnRequest(
            chat,
            end,
            kind,
            api,
            prefill,
            read,
            dry_run=dry_run,
            counts=self.counts,
            model=model,
            options=dict(options or {}),
        )

    # --------------------------------------------------------------- drafts

    def drafts(self, chat_id: str) -> list[Draft]:
        """The chat's drafts, oldest first."""
        owner = self.store.get_chat(chat_id).owner
        docs = self.store.find_documents(DRAFT_KIND, owner=owner)
        return [d for d in (self._draft(doc) for doc in docs) if d.chat_id == chat_id]

    def keep_draft(self, draft_id: str, *, revision: int | None = None) -> WriteResult:
        """Store a draft where its generation would have put it, then forget the draft.

        Stored by the rules a generation's result follows (shown only if the person is
        still where it goes), without the turn's state, which a draft does not keep;
        `revision`: the one the caller read (a chat changed since is a conflict), else
        the chat's current one.
        """
        draft = self._draft(self.store.get_document(draft_id))
        chat = self.chats.get_chat(draft.chat_id)
        if revision is not None:
            chat = replace(chat, revision=revision)
        anchor_id = draft.anchor_id or None
        info = GenerationInfo(extras={"draft": draft.reason})
        label = "keep draft"
        if draft.kind is GenerationType.CONTINUE and anchor_id is not None:
            outcome = self.chats.extend(
                chat.id,
                anchor_id,
                draft.text,
                revision=chat.revision,
                trim_end=draft.stripped,
                label=label,
            )
        elif draft.kind is GenerationType.IMPERSONATE:
            outcome = self.chats.add_reply(
                chat.id,
                anchor_id,
                draft.text,
                revision=chat.revision,
                role=NodeRole.USER,
                speaker=chat.user_name,
                label=label,
            )
        elif (
            draft.kind in (GenerationType.SWIPE, GenerationType.REGENERATE)
            and anchor_id is not None
        ):
            outcome = self.chats.add_candidate(
                chat.id, anchor_id, draft.text, revision=chat.revision, generation=info, label=label
            )
        else:
            outcome = self.chats.add_reply(
                chat.id,
                anchor_id,
                draft.text,
                revision=chat.revision,
                speaker=chat.characters[0].name if chat.characters else "",
                generation=info,
                label=label,
            )
        self.drop_draft(draft_id)
        return outcome

    def drop_draft(self, draft_id: str) -> None:
        doc = self.store.get_document(draft_id)
        if doc.kind != DRAFT_KIND:
            raise NotFound("no such draft", code="no_such_draft")
        self.store.delete_document(draft_id, revision=doc.revision)

    def _draft(self, doc: Any) -> Draft:
        data = doc.data
        return Draft(
            id=doc.id,
            chat_id=str(data.get("chat_id", "")),
            kind=GenerationType(data.get("kind", "normal")),
            anchor_id=data.get("anchor_id"),
            text=str(data.get("text", "")),
            reason=str(data.get("reason", "")),
            cause=data.get("cause"),
            revision=doc.revision,
            stripped=bool(data.get("continued_stripped", False)),
        )

    # -------------------------------------------------------------- internals

    def _refuse_if_busy(self, chat_id: str) -> None:
        if chat_id in self._starting or self.registry.for_chat(chat_id, running_only=True):
            raise Conflict(
                "a generation is already running in this chat; stop it first",
                code="generation_running",
            )

    @contextlib.contextmanager
    def _reserved(self, chat_id: str) -> Iterator[None]:
        """Hold the chat while a generation starts: a second start meanwhile is refused."""
        self._refuse_if_busy(chat_id)
        self._starting.add(chat_id)
        try:
            yield
        finally:
            self._starting.discard(chat_id)

    def _path_end(self, chat_id: str) -> tuple[Chat, PathTail]:
        """The chat and the last two messages of its path."""
        chat = self.store.get_chat(chat_id)
        if chat.active_leaf_id is None:
            return chat, PathTail((), 0, 0, chat.base_state)
        return chat, self.paths.tail(chat, chat.active_leaf_id, 2)

    def _foresee(self, chat_id: str, speaker: str, text: str) -> None:
        """Tell the prompt builder, if it cares, of a message about to be sent (recall
        embeds it at once, beside the build, instead of when the build asks)."""
        foresee = getattr(self.build_prompt, "foresee", None)
        if foresee is not None:
            foresee(chat_id, speaker, text)

    def build_serialized(self, turn: TurnRequest) -> Prompt | PreparedTurn:
        """Build a turn's prompt, one build at a time: builds share the token-count cache."""
        with self._build_lock:
            return self.build_prompt(turn)

    async def _begin(
        self,
        chat_id: str,
        connection_name: str | None,
        choose: Callable[[PathTail], tuple[GenerationType, Node | None]] | None,
        *,
        said: tuple[str, str, str | None] | None = None,
        revision: int | None = None,
        member: str | None = None,
    ) -> RunningGeneration:
        """Start a generation: on the builder's thread, in one hop, read the path's end,
        `choose` the kind and the node it answers (or take the person's message `said`, as
        text, speaker and picture, and answer it), build the prompt; then run it as a task of its
        own. `revision`: the one the caller read; a chat changed since is a conflict. The
        run's `changed_below` names the message under which the chat changes.

        A sent message is written while the model's request goes out (the write waits
        on the disk, the request on the network); the start returns once it is stored,
        a failed write stops the generation, and a reply is stored only after its message.
        """
        with self._reserved(chat_id):

            def prepare() -> tuple[_Plan, Node | None]:
                # one connection for the turn's reads (the chat, its path, the library)
                with self.store.reading():
                    return prepare_reading()

            def prepare_reading() -> tuple[_Plan, Node | None]:
                chat, end = self._path_end(chat_id)
                # an account whose hour's quota is used up is refused before any work
                self.connections.gate.check(chat.owner)
                # the chat's own connection unless the caller names one; a missing
                # connection fails before any write
                connection = connection_for(self.connections.of(chat.owner), chat, connection_name)
                if revision is not None and revision != chat.revision:
                    raise StaleRevision(
                        "the chat changed since it was read",
                        current_revision=chat.revision,
                        expected=revision,
                    )
                below = end.nodes[-1].parent_id if end.nodes else None
                message = None
                if said is None:
                    assert choose is not None
                    kind, anchor = choose(end)
                    plan = self._plan(chat, kind, anchor, connection, member=member, end=end)
                else:
                    if said[2] is not None:
                        ImageLibrary(self.store, owner=chat.owner).require(said[2])
                    message = self._message_to_post(chat, end, *said)
                    plan = self._plan(
                        chat,
                        GenerationType.NORMAL,
                        message,
                        connection,
                        pending=message,
                        member=member,
                        end=end,
                    )
                plan.run.changed_below = below
                return plan, message

            loop = asyncio.get_running_loop()
            plan, message = await loop.run_in_executor(self._builder, prepare)
            run = plan.run
            if message is not None:
                plan.posted = loop.create_future()
            run.draft_info = {
                "anchor_id": plan.anchor.id if plan.anchor else None,
                # the chat's account: whichever process adopts the run if this one dies
                # keeps its draft for the owner, whose chat lists it
                "owner": plan.chat.owner,
                "continued_stripped": "1" if plan.continued_stripped else "",
            }
            self.registry.add(run)
            self.last_prompts[chat_id] = plan.prompt
            run.publish(
                Started(run.id, chat_id, plan.kind, plan.anchor.id if plan.anchor else None)
            )
            self.events.emit(
                Event(
                    EventName.GENERATION_STARTED,
                    chat_id,
                    plan.anchor.id if plan.anchor else None,
                    kind=plan.kind.value,
                    detail={"generation_id": run.id},
                )
            )
            run.task = asyncio.create_task(self._run(plan), name=f"generation {run.id}")
            if message is not None and plan.posted is not None:
                # Let the request start out first: the write's Python work would hold the
                # interpreter while the request waits to be sent.
                for _ in range(_YIELDS_BEFORE_WRITE):
                    await asyncio.sleep(0)
                try:
                    await loop.run_in_executor(self._writer, self._post, plan.chat, message)
                except Exception:
                    plan.posted.cancel()
                    run.task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await run.task
                    raise
                plan.posted.set_result(None)
            return run

    def _message_to_post(
        self, chat: Chat, end: PathTail, text: str, speaker: str, image: str | None
    ) -> Node:
        """The person's message as it will be stored after the path's end."""
        leaf = end.nodes[-1] if end.nodes else None
        return Node(
            extras=with_image({}, image) if image else {},
            id=new_id(),
            chat_id=chat.id,
            parent_id=leaf.id if leaf else None,
            role=NodeRole.USER,
            content=text,
            speaker=speaker or chat.user_name,
            created=self.clock(),
            depth=leaf.depth + 1 if leaf else 0,
        )

    def _post(self, chat: Chat, message: Node) -> None:
        # The revision the prompt was built at: a change since then is a conflict.
        self.chats.append(
            chat.id,
            NodeRole.USER,
            message.content,
            revision=chat.revision,
            speaker=message.speaker,
            extras=message.extras or None,
            node_id=message.id,
            created=message.created,
        )

    def _plan(
        self,
        chat: Chat,
        kind: GenerationType,
        anchor: Node | None,
        connection: Connection,
        *,
        pending: Node | None = None,
        member: str | None = None,
        end: PathTail | None = None,
    ) -> _Plan:
        """Everything a generation needs, its prompt built (`pending`: a message being
        written after the path's end, which the prompt includes; `member`: in a group
        chat, who speaks)."""
        speaker, members = self._speaker(chat, kind, anchor, member, end, pending)
        if speaker and chat.group_id:
            connection = self._member_connection(chat, speaker, connection)
        # Mistral continues in place only where the connection turns its `prefix` on
        # (algo-providers.md §10, SillyTavern's `mistral.enablePrefix`, off by default)
        in_place = provider(connection.api).continues_in_place_with(connection.options)
        prefill = kind is GenerationType.CONTINUE and in_place
        turn = self.turn(
            chat,
            anchor.id if anchor else None,
            kind,
            connection.api,
            prefill=prefill,
            pending=pending,
            model=connection.model,
            options=connection.options,
        )
        if chat.group_id:
            turn = replace(turn, speaker=speaker)
        try:
            turn = self._intercepted(turn)
        except GenerationAborted as aborted:
            return _Plan(
                run=RunningGeneration(new_id(), chat.id, kind),
                chat=chat,
                connection=connection,
                kind=kind,
                anchor=anchor,
                prompt=Prompt(kind="chat"),
                tools=(),
                speaker=speaker,
                members=members,
                aborted=aborted,
            )
        built = self.build_serialized(turn)
        prepared = built if isinstance(built, PreparedTurn) else PreparedTurn(built)
        prompt = self.events.prompt_ready(
            prepared.prompt, chat_id=chat.id, kind=kind.value, dry_run=False
        )
        tools: tuple[str, ...] = ()
        registry = None
        base_variables = None
        tool_variables: dict[str, Any] = {}
        if kind in (GenerationType.NORMAL, GenerationType.REGENERATE):
            tools = prepared.tools
            if prepared.function_calling and not connection.api.is_text_completion:
                # The tools' scripts set this generation's copy of the chat variables.
                tool_variables = self._turn_variables(prompt, turn, anchor)
                base = dict(tool_variables)
                own = (
                    list(self.user_tools(chat, tool_variables))
                    if self.user_tools is not None
                    else []
                )
                if own:
                    registry = ToolRegistry([*self.tools.tools(), *own])
                    tools = tuple(dict.fromkeys([*tools, *(t.spec.name for t in own)]))
                    base_variables = base
        return _Plan(
            run=RunningGeneration(new_id(), chat.id, kind),
            chat=chat,
            connection=connection,
            kind=kind,
            anchor=anchor,
            prompt=prompt,
            tools=tools,
            registry=registry,
            base_variables=base_variables,
            tool_variables=tool_variables if base_variables is not None else None,
            request=prepared.request,
            continued_text=anchor.content if anchor and kind is GenerationType.CONTINUE else "",
            continued_stripped=prefill and connection.api is Api.ANTHROPIC,
            speaker=speaker,
            members=members,
        )

    def _intercepted(self, turn: TurnRequest) -> TurnRequest:
        """The turn over the chat copy the interceptors changed (the same turn when none
        did). A swipe's or a regenerate's replaced reply is not theirs to see."""
        if not self.events.intercepts:
            return turn
        whole = turn.read(WHOLE_PATH)
        nodes = list(whole.nodes)
        replaced = (
            nodes.pop()
            if turn.kind in (GenerationType.SWIPE, GenerationType.REGENERATE) and nodes
            else None
        )
        changed = self.events.intercept(turn.chat.id, turn.kind.value, nodes)
        if changed is None:
            return turn
        path = (*changed, replaced) if replaced is not None else tuple(changed)
        tail = PathTail(path, 0, 0, whole.state)
        return replace(turn, read=lambda want: tail)

    def _speaker(
        self,
        chat: Chat,
        kind: GenerationType,
        anchor: Node | None,
        member: str | None,
        end: PathTail | None,
        pending: Node | None,
    ) -> tuple[str, tuple[str, ...]]:
        """Who speaks, and the group's members (none for a chat with one character).

        algo-chat-ops.md §5.1: the member asked for; a swipe, a regenerate or a
        continue keeps the author of the reply; else the first the scheduler picks."""
        first = chat.characters[0].name if chat.characters else ""
        if not chat.group_id:
            return first, ()
        groups = GroupService(self.chats, owner=chat.owner)
        group = groups.get(chat.group_id)
        found = groups.members(group, chat)
        names = tuple(m.name for m in found)
        if member:
            if member not in names:
                raise NotFound(
                    f"no member named {member!r} in the group",
                    field="member",
                    code="no_member_named_in_group",
                    params={"member": str(member)},
                )
            return member, names
        if (
            kind in (GenerationType.SWIPE, GenerationType.REGENERATE, GenerationType.CONTINUE)
            and anchor is not None
            and anchor.role is NodeRole.ASSISTANT
            and anchor.speaker in names
        ):
            return anchor.speaker, names
        active = [m.name for m in found if not m.muted] or list(names)
        if kind is GenerationType.IMPERSONATE or not active:
            return (active[0] if active else first), names
        path = list(end.nodes) if end is not None else []
        if pending is not None:
            path.append(pending)
        position = (end.before if end is not None else 0) + len(path)
        chosen = speakers_for(
            group, found, chat.id, path, position=position, user_input=pending is not None
        )
        return (chosen[0] if chosen else active[0]), names

    def _member_connection(self, chat: Chat, speaker: str, connection: Connection) -> Connection:
        """A member's own connection, when the group gives it one."""
        groups = GroupService(self.chats, owner=chat.owner)
        assert chat.group_id is not None
        for found in groups.members(groups.get(chat.group_id), chat):
            if found.name == speaker and found.connection:
                return self.connections.of(chat.owner).get(found.connection)
        return connection

    async def _run(self, plan: _Plan) -> Completed:
        """The generation's task: never ends without publishing a `Completed`."""
        try:
            done = await self._generate(plan)
            if done.outcome is Ending.SAVED and self.after_reply:
                chat_id = plan.chat.id
                task = self.follow_ups[chat_id] = asyncio.create_task(self._follow_up(chat_id))
                # a finished one is let go: a server sees thousands of chats
                task.add_done_callback(
                    lambda ended: (
                        self.follow_ups.pop(chat_id, None)
                        if self.follow_ups.get(chat_id) is ended
                        else None
                    )
                )
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

    async def _generate(self, plan: _Plan) -> Completed:
        run = plan.run
        started = self.clock()
        started_clock = time.perf_counter()
        first_token: float | None = None
        streamed: list[str] = []  # every text delta of every round: what a draft keeps
        reply: list[str] = []  # the text of the last round: the reply itself
        reasoning: list[str] = []
        usage = Usage()
        finish: Finish | None = None
        if plan.aborted is not None:
            if plan.posted is not None:
                await plan.posted  # the person's message is kept, as SillyTavern keeps it
            return self._fail(plan, "", plan.aborted.message, Ending.FAILED, cause="aborted")
        too_big = prompt_fit.overflow(plan.prompt)
        if too_big is not None:
            # the model could only refuse it, and again on a retry: nothing is sent
            if plan.posted is not None:
                await plan.posted
            message = too_big.message(
                plan.connection.name, prompt_fit.local_context(plan.connection)
            )
            return self._fail(plan, "", message, Ending.FAILED, cause=prompt_fit.CAUSE)
        try:
            connections = self.connections.of(plan.chat.owner)
            base_url, key = await connections.endpoint(plan.connection)
            prompt = plan.prompt
            for round_number in range(MAX_TOOL_ROUNDS + 1):
                offer = plan.tools if round_number < MAX_TOOL_ROUNDS else ()
                calls: list[ToolCall] = []
                reply = []
                request = build_request(
                    prompt,
                    plan.connection.api,
                    self._options(plan, offer),
                    base_url=base_url,
                    key=key,
                )
                run.requests.append((request.url, request.body))
                # each round is a request of its own, counted against the account's quota
                async for event in connections.stream(
                    request,
                    stream_parser(plan.connection.api),
                    client=self.model_client(),
                    secret=key,
                    timeouts=self.timeouts,
                ):
                    run.publish(event)
                    if isinstance(event, TextDelta):
                        first_token = first_token or time.perf_counter()
                        reply.append(event.text)
                        streamed.append(event.text)
                    elif isinstance(event, ReasoningDelta):
                        reasoning.append(event.text)
                    elif isinstance(event, ToolCall):
                        calls.append(event)
                    elif isinstance(event, Usage):
                        usage = Usage(
                            _add(usage.input_tokens, event.input_tokens),
                            _add(usage.output_tokens, event.output_tokens),
                        )
                    elif isinstance(event, Finish):
                        finish = event
                    elif isinstance(event, StreamError):
                        return self._fail(
                            plan,
                            "".join(streamed),
                            event.message,
                            Ending.FAILED,
                            cause=event.kind.value,
                        )
                if not calls or not offer:
                    break
                prompt = await self._tool_round(plan, prompt, "".join(reply), calls)
        except asyncio.CancelledError:
            self._fail(plan, "".join(streamed), "stopped", Ending.STOPPED)
            raise
        except TavernaError as exc:
            return self._fail(plan, "".join(streamed), exc.message, Ending.FAILED)
        info = GenerationInfo(
            provider=plan.connection.api.value,
            model=plan.connection.model,
            started=started,
            finished=self.clock(),
            prompt_tokens=usage.input_tokens,
            completion_tokens=usage.output_tokens,
            finish_reason=(finish.reason.value if finish else FinishReason.STOP.value),
            extras=_info_extras(plan, started_clock, first_token, reasoning),
        )
        record = self._reply_record(plan, "".join(reply), info)
        if plan.members and not record["text"] and plan.kind in _ANSWERS:
            # nothing of the speaker's was left: told, never stored as an empty message
            if plan.posted is not None:
                await plan.posted
            speaker = record["speaker"]
            message = f"the model returned nothing for {speaker} (or only other members' lines)"
            return self._fail(plan, "".join(streamed), message, Ending.FAILED, cause="empty_reply")
        try:
            if plan.posted is not None:
                await plan.posted  # the message this replies to is stored first
            return self._finish(plan, await self._save(plan, record))
        except TavernaError as exc:
            return self._fail(
                plan, "".join(streamed), f"could not save: {exc.message}", Ending.FAILED
            )
        except Exception as exc:  # the database is away: the reply waits in the journal
            logger.exception("generation %s could not be saved", run.id)
            reason = f"could not save: {type(exc).__name__}: {exc}"
            if self._journal_entry("reply", record):
                return self._finish(plan, Completed(Ending.SAVING, record["text"], error=reason))
            return self._fail(plan, "".join(streamed), reason, Ending.FAILED)

    async def _follow_up(self, chat_id: str) -> None:
        for hook in self.after_reply:
            try:
                await hook(chat_id)
            except Exception:  # a failed follow-up never touches the reply
                logger.exception("after-reply hook for chat %s failed", chat_id)

    def _options(self, plan: _Plan, tools: Sequence[str]) -> RequestOptions:
        chat = plan.chat
        members = plan.members or tuple(c.name for c in chat.characters)
        preset = dict(plan.request)
        # what the connection sets itself wins over the preset
        if "use_system_prompt" in plan.connection.options:
            preset.pop("use_system_prompt", None)
        if plan.connection.post_processing is not PostProcessing.NONE:
            preset.pop("post_processing", None)
        return self.connections.of(chat.owner).request_options(
            plan.connection,
            user_name=chat.user_name or "User",
            char_name=plan.speaker or (members[0] if members else ""),
            group_members=members if (len(members) > 1 or plan.members) else (),
            impersonate=plan.kind is GenerationType.IMPERSONATE,
            tools=(plan.registry or self.tools).specs(tools),
            **preset,
        )

    async def _tool_round(
        self, plan: _Plan, prompt: Prompt, said: str, calls: list[ToolCall]
    ) -> Prompt:
        """Run the calls and give the model its answers: the prompt of the next round."""
        messages = list(prompt.messages)
        messages.append(
            PromptMessage(
                Role.ASSISTANT,
                said,
                tool_calls=tuple(
                    {"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls
                ),
                source="tool-call",
            )
        )
        if plan.posted is not None:
            await plan.posted  # a tool's script may write the chat: the message comes first
        for call in calls:
            result = await (plan.registry or self.tools).call(call.name, call.arguments)
            plan.tool_steps.append((said if call is calls[0] else "", call, result))
            plan.run.publish(ToolResult(call.id, call.name, result))
            messages.append(
                PromptMessage(Role.TOOL, result, tool_call_id=call.id, source="tool-result")
            )
        return replace(prompt, messages=tuple(messages), prefill="")

    async def _save(self, plan: _Plan, record: dict[str, Any]) -> Completed:
        """Store the result on the reply writer's thread, off the event loop (a write's tens of
        statements would hold up every other stream's events and first token). A Stop
        that comes while it is being written waits for it: the reply is stored, and says so."""
        loop = asyncio.get_running_loop()
        stored = loop.run_in_executor(self._reply_writer, self._store_record, record)
        try:
            return await asyncio.shield(stored)
        except asyncio.CancelledError:
            self._finish(plan, await stored)
            raise

    def _reply_record(self, plan: _Plan, text: str, info: GenerationInfo) -> dict[str, Any]:
        """What storing a finished reply takes, as plain data: what the journal keeps when
        the database cannot take it now (read from the plan only, never from the store)."""
        kind = plan.kind
        text = trim_at_stop(text, plan.prompt.stop)
        if kind is not GenerationType.CONTINUE:
            text = text.strip()
        chat = plan.chat
        speaker = plan.speaker or (chat.characters[0].name if chat.characters else "")
        if plan.members and kind is not GenerationType.IMPERSONATE:
            # algo-chat-ops.md §5.4: a group reply ends where another member's line starts,
            # and the speaker's own `Name:` is taken off (SillyTavern's cleanUpMessage)
            text = clean_group_reply(text, speaker, plan.members)
        turn_state = dict(plan.prompt.state)
        changed_globals = turn_state.pop("globalVariables", None)
        if plan.tool_steps and plan.base_variables is not None:
            turn_state = self._with_tool_variables(plan, turn_state)
        return {
            **self._draft_fields(plan, text, "", None),
            "owner": chat.owner,
            "speaker": speaker,
            "group": bool(plan.members),
            "generation": info.to_json(),
            "turn_state": turn_state,
            "globals": changed_globals,
            "continued_text": plan.continued_text,
            "tool_steps": [asdict(step) for step in _tool_steps(plan)],
        }

    def _store_record(self, record: Mapping[str, Any]) -> Completed:
        """Have the chat service store a reply (`_reply_record`), in one transaction at the
        chat's current revision (the person may have moved on; the rules say where it lands)."""
        kind = GenerationType(record["kind"])
        text: str = record["text"]
        anchor_id: str | None = record.get("anchor_id")
        if kind is GenerationType.IMPERSONATE:
            draft_id = self._put_draft({**record, "reason": "impersonation"})
            return Completed(Ending.IMPERSONATED, text, draft_id=draft_id)
        chat = self.chats.get_chat(record["chat_id"])
        info = GenerationInfo.from_json(record["generation"])
        turn_state = record["turn_state"]
        steps = [ToolStep(**step) for step in record.get("tool_steps") or ()]
        if kind is GenerationType.CONTINUE:
            assert anchor_id is not None
            outcome = self.chats.extend(
                chat.id,
                anchor_id,
                text,
                revision=chat.revision,
                expected=record["continued_text"],
                trim_end=bool(record["continued_stripped"]),
                turn_state=turn_state,
                label=kind.value,
            )
        elif kind in (GenerationType.SWIPE, GenerationType.REGENERATE):
            assert anchor_id is not None
            outcome = self.chats.add_candidate(
                chat.id,
                anchor_id,
                text,
                revision=chat.revision,
                # a solo reply speaks as before
                speaker=record["speaker"] if record["group"] else "",
                generation=info,
                turn_state=turn_state,
                replaces=kind is GenerationType.REGENERATE,
                label=kind.value,
                tool_steps=steps,
            )
        else:
            outcome = self.chats.add_reply(
                chat.id,
                anchor_id,
                text,
                revision=chat.revision,
                speaker=record["speaker"],
                generation=info,
                turn_state=turn_state,
                tool_steps=steps,
                label=kind.value,
            )
        assert outcome.node is not None
        if record.get("globals") is not None:
            # the reply is stored: the globals its prompt's macros set are kept too
            write_global_variables(self.store, record["globals"], record["owner"])
        return Completed(
            Ending.SAVED, text, node_id=outcome.node.id, revision=outcome.chat.revision
        )

    def _turn_variables(
        self, prompt: Prompt, turn: TurnRequest, anchor: Node | None
    ) -> dict[str, Any]:
        """The chat variables a reply starts from: the prompt's (after its macros), else
        those in force where it goes (before the replaced reply, for a regenerate)."""
        found = prompt.state.get("variables")
        if isinstance(found, Mapping):
            return dict(found)
        if turn.kind is GenerationType.REGENERATE and anchor is not None:
            if anchor.parent_id is None:
                return dict(turn.chat.base_state.variables)
            return dict(self.chats.state_at(turn.chat.id, anchor.parent_id).variables)
        return dict(turn.read(1).state.variables)

    def _with_tool_variables(self, plan: _Plan, turn_state: dict[str, Any]) -> dict[str, Any]:
        """The turn's state with what the tools' scripts set and removed: the reply
        records it, so it follows that reply and not the message it answers (a regenerated
        or swiped reply starts again from that message's variables)."""
        assert plan.base_variables is not None and plan.tool_variables is not None
        base, after = plan.base_variables, plan.tool_variables
        changed = {k: v for k, v in after.items() if k not in base or base[k] != v}
        removed = [k for k in base if k not in after]
        if not changed and not removed:
            return turn_state
        variables = turn_state.get("variables")
        merged = dict(variables) if isinstance(variables, Mapping) else dict(base)
        merged.update(changed)
        for key in removed:
            merged.pop(key, None)
        return {**turn_state, "variables": merged}

    def _draft_fields(
        self, plan: _Plan, text: str, reason: str, cause: str | None
    ) -> dict[str, Any]:
        return {
            "chat_id": plan.chat.id,
            "owner": plan.chat.owner,
            "kind": plan.kind.value,
            "anchor_id": plan.anchor.id if plan.anchor else None,
            "text": text,
            "reason": reason,
            "cause": cause,
            "continued_stripped": plan.continued_stripped,
            "generation_id": plan.run.id,
            "created": self.clock().isoformat(),
        }

    def _put_draft(self, fields: Mapping[str, Any]) -> str:
        """Store a draft (its fields as `_draft_fields` gives them); its id."""
        doc = self.store.put_document(
            DRAFT_KIND,
            f"{fields['kind']} {fields.get('generation_id') or ''}".strip(),
            {key: fields.get(key) for key in _DRAFT_DATA},
            owner=fields.get("owner") or "",
        )
        return doc.id

    def _keep_as_draft(
        self, plan: _Plan, text: str, reason: str, cause: str | None = None
    ) -> str | None:
        if not text:
            return None
        fields = self._draft_fields(plan, text, reason, cause)
        try:
            return self._put_draft(fields)
        except TavernaError:
            raise
        except Exception:
            # the database is away: the draft waits in the journal
            if not self._journal_entry("draft", fields):
                raise
            return None

    def _journal_entry(self, op: str, fields: Mapping[str, Any]) -> bool:
        """Keep what the database could not take in the journal; False when there is no
        journal or it could not be written either."""
        if self.journal is None:
            return False
        try:
            self.journal.write(op, fields)
        except Exception:
            logger.exception(
                "could not write generation %s to the journal", fields.get("generation_id")
            )
            return False
        return True

    def replay_journal(self) -> tuple[int, int]:
        """Move what waits in the journal into the database (see `journal`): how many
        entries were moved and how many wait still. Run on the reply writer's thread."""
        if self.journal is None:
            return 0, 0
        return self.journal.replay(self._move)

    def waiting(self, chat_id: str) -> list[dict[str, Any]]:
        """A chat's replies and drafts that wait in the journal for the database, after
        one more try to move them there (the caller has just read the database)."""
        if self.journal is None or not self.journal.pending(chat_id):
            return []
        try:
            self.replay_journal()
        except Exception:
            logger.exception("the journal could not be replayed")
        return self.journal.pending(chat_id)

    async def keep_journal(self, every: float = JOURNAL_EVERY) -> None:
        """Replay the journal now and every `every` seconds while anything waits there."""
        loop = asyncio.get_running_loop()
        if self.journal is not None:
            try:
                # its space is reserved now, while the disk has room
                await asyncio.to_thread(self.journal.prepare)
            except OSError as exc:
                logger.warning("the journal of replies could not be made: %s", exc)
        while self.journal is not None:
            if self.journal.has_pending():
                try:
                    await loop.run_in_executor(self._reply_writer, self.replay_journal)
                except Exception:
                    logger.exception("the journal could not be replayed")
            await asyncio.sleep(every)

    def _move(self, entry: dict[str, Any]) -> None:
        """Store one journal entry: a reply where it goes (or, when the chat moved on so
        it fits no more, as a draft), a draft as a draft."""
        try:
            if entry.get("op") == "draft":
                self._put_draft(entry)
            else:
                self._store_record(entry)
        except TavernaError as exc:
            try:
                self._put_draft({**entry, "reason": f"saved late: {exc.message}"})
            except TavernaError as refused:
                logger.error("journal entry %s dropped: %s", entry["id"], refused.message)
                return
            except Exception as away:
                raise Unsettled(f"{type(away).__name__}: {away}") from away
        except Exception as exc:
            raise Unsettled(f"{type(exc).__name__}: {exc}") from exc
        if self.on_moved is not None:
            with contextlib.suppress(Exception):
                self.on_moved(entry["chat_id"])

    def keep_orphan(self, meta: Mapping[str, str], text: str) -> str | None:
        """Keep the text of a generation whose process died as a draft (its `meta` as
        the shared registry holds it); the draft's id, None when nothing streamed (or when
        it waits in the journal for the database)."""
        if not text:
            return None
        fields = {
            "chat_id": meta["chat_id"],
            # the chat's account, whichever process adopts the run (a run shared
            # before its meta held the owner says "": its chat says whose it is)
            "owner": meta.get("owner") or self._owner_of(meta["chat_id"]),
            "kind": meta.get("kind", GenerationType.NORMAL.value),
            "anchor_id": meta.get("anchor_id") or None,
            "text": text,
            "reason": "the server stopped while it streamed",
            "cause": "interrupted",
            "continued_stripped": bool(meta.get("continued_stripped")),
            "generation_id": meta.get("generation_id"),
            "created": self.clock().isoformat(),
        }
        try:
            return self._put_draft(fields)
        except TavernaError:
            raise
        except Exception:
            if not self._journal_entry("draft", fields):
                raise
            return None

    def _owner_of(self, chat_id: str) -> str:
        """The account of a chat (this service's own when the chat is gone)."""
        try:
            return self.store.get_chat(chat_id).owner
        except NotFound:
            return self.owner

    def _fail(
        self, plan: _Plan, text: str, error: str, outcome: Ending, *, cause: str | None = None
    ) -> Completed:
        """End a generation that stored nothing: what streamed is kept as a draft if it
        can be; the generation ends either way, so the chat is free again."""
        try:
            draft_id = self._keep_as_draft(plan, text, error, cause)
        except Exception as exc:
            logger.exception("the draft of generation %s could not be kept", plan.run.id)
            draft_id = None
            error = f"{error}; its text could not be kept as a draft: {type(exc).__name__}"
        done = Completed(outcome, text, draft_id=draft_id, error=error, cause=cause)
        return self._finish(plan, done)

    def _finish(self, plan: _Plan, done: Completed) -> Completed:
        plan.run.publish(done)
        self._announce(plan.run, done)
        return done

    def _announce(self, run: RunningGeneration, done: Completed) -> None:
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


def _length(end: PathTail) -> int:
    """Live messages on the whole path."""
    return end.before + len(end.nodes)


def _add(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _info_extras(
    plan: _Plan, started: float, first_token: float | None, reasoning: list[str]
) -> dict[str, Any]:
    extras: dict[str, Any] = {
        "connection": plan.connection.name,
        "kind": plan.kind.value,
        "seconds": round(time.perf_counter() - started, 3),
    }
    if first_token is not None:
        extras["first_token_seconds"] = round(first_token - started, 3)
    if reasoning:
        extras["reasoning"] = "".join(reasoning)
    if plan.tool_steps:
        extras["tool_rounds"] = len(plan.tool_steps)
    return extras


def _tool_steps(plan: _Plan) -> list[ToolStep]:
    """The tool calls the model made for this reply, to store before it."""
    return [
        ToolStep(said, call.id, call.name, call.arguments, result)
        for said, call, result in plan.tool_steps
    ]
