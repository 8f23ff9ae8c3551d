"""Planning a generation: from the chat's path end and the kind asked for, what the
generation answers, who speaks, through which connection, and its prompt, built."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from taverna.engine.assembly.context import GenerationType
from taverna.errors import StaleRevision
from taverna.model.chat import Chat, Node, NodeRole, PathTail, new_id
from taverna.model.prompt import Prompt
from taverna.providers.registry import provider
from taverna.providers.request import Api
from taverna.services.chats.images import ImageLibrary, with_image
from taverna.services.chats.service import ChatService
from taverna.services.connections.service import Connection, ConnectionService
from taverna.services.plugins import GenerationAborted
from taverna.services.plugins.tools import ToolRegistry
from taverna.services.turns.chat_connection import connection_for
from taverna.services.turns.kinds import ASKED, CHOOSERS
from taverna.services.turns.plan import Plan
from taverna.services.turns.runs import RunningGeneration
from taverna.services.turns.speakers import member_connection, speaker
from taverna.services.turns.tool_rounds import UserTools, offer_tools
from taverna.services.turns.turn import PreparedTurn
from taverna.services.turns.turn_prompts import TurnPrompts


@dataclass(frozen=True, slots=True)
class Said:
    """The person's message a send posts: its text, who says it, a stored picture's URL."""

    text: str
    speaker: str = ""
    image: str | None = None


@dataclass(frozen=True, slots=True)
class Ask:
    """What a start asks for: the kind (a send's is `NORMAL`, with what is `said`), the
    connection named (None: the chat's own), the revision the caller read (None: any) and,
    in a group chat, the member who answers (None: the scheduler's pick)."""

    kind: GenerationType = GenerationType.NORMAL
    connection: str | None = None
    revision: int | None = None
    member: str | None = None
    said: Said | None = None
    # the account asking: builds that wait take turns by account ("": one for all)
    account: str = ""


def asked(
    kind: str,
    *,
    text: str = "",
    image: str | None = None,
    speaker: str = "",
    connection: str | None = None,
    revision: int | None = None,
    member: str | None = None,
    account: str = "",
) -> Ask:
    """What a person asks for by the kind's name (`kinds.ASKED`): a send with words or a
    picture posts them as the person's message first; without, it answers the last one."""
    said = None
    if kind == "normal" and (text.strip() or image is not None):
        said = Said(text, speaker, image)
    return Ask(ASKED[kind], connection, revision, member, said, account)


class Planner:
    """Plans generations over a process's prompts, connections and tools."""

    def __init__(
        self,
        chats: ChatService,
        connections: ConnectionService,
        prompts: TurnPrompts,
        tools: ToolRegistry,
        *,
        user_tools: UserTools | None,
        clock: Callable[[], datetime],
    ) -> None:
        self.chats = chats
        self.store = prompts.store
        self.connections = connections
        self.prompts = prompts
        self.tools = tools
        self.user_tools = user_tools
        self.clock = clock

    def plan_generation(
        self, chat_id: str, ask: Ask, run: RunningGeneration | None = None
    ) -> tuple[Plan, Node | None]:
        """In one read of the store: the chat's path end, the kind's choice of what the
        generation answers (or the person's message, to be posted and answered), and the
        plan (for `run`, else a new one); with the message to post, if any. Refused
        before any write: a used-up quota, a missing connection, a chat changed since
        `ask.revision`."""
        with self.store.reading():
            chat, end = self.prompts.path_end(chat_id)
            # an account whose hour's quota is used up is refused before any work
            self.connections.gate.check(chat.owner)
            connection = connection_for(self.connections.of(chat.owner), chat, ask.connection)
            if ask.revision is not None and ask.revision != chat.revision:
                raise StaleRevision(
                    "the chat changed since it was read",
                    current_revision=chat.revision,
                    expected=ask.revision,
                )
            message = None
            if ask.said is None:
                kind, anchor = CHOOSERS[ask.kind](end)
            else:
                if ask.said.image is not None:
                    ImageLibrary(self.store, owner=chat.owner).require(ask.said.image)
                kind, anchor = GenerationType.NORMAL, self._message_to_post(chat, end, ask.said)
                message = anchor
            plan = self.plan_turn(
                chat,
                kind,
                anchor,
                connection,
                pending=message,
                member=ask.member,
                end=end,
                run=run,
            )
            plan.run.changed_below = end.nodes[-1].parent_id if end.nodes else None
            return plan, message

    def _message_to_post(self, chat: Chat, end: PathTail, said: Said) -> Node:
        """The person's message as it will be stored after the path's end."""
        leaf = end.nodes[-1] if end.nodes else None
        return Node(
            extras=with_image({}, said.image) if said.image else {},
            id=new_id(),
            chat_id=chat.id,
            parent_id=leaf.id if leaf else None,
            role=NodeRole.USER,
            content=said.text,
            speaker=said.speaker or chat.user_name,
            created=self.clock(),
            depth=leaf.depth + 1 if leaf else 0,
        )

    def plan_turn(
        self,
        chat: Chat,
        kind: GenerationType,
        anchor: Node | None,
        connection: Connection,
        *,
        pending: Node | None = None,
        member: str | None = None,
        end: PathTail | None = None,
        run: RunningGeneration | None = None,
    ) -> Plan:
        """Everything a generation needs, its prompt built (`pending`: a message being
        written after the path's end, which the prompt includes; `member`: in a group
        chat, who speaks; `run`: the generation it is for, else a new one)."""
        says, members = speaker(self.chats, chat, kind, anchor, member, end, pending)
        if says and chat.group_id:
            connection = member_connection(self.chats, self.connections, chat, says, connection)
        # Mistral continues in place only where the connection turns its `prefix` on
        # (algo-providers.md §10, SillyTavern's `mistral.enablePrefix`, off by default)
        in_place = provider(connection.api).continues_in_place_with(connection.options)
        prefill = kind is GenerationType.CONTINUE and in_place
        turn = self.prompts.turn(
            chat,
            anchor.id if anchor else None,
            kind,
            connection.api,
            prefill=prefill,
            pending=pending,
            model=connection.model,
            options=connection.options,
        )
        turn = replace(turn, backend=self.connections.of(chat.owner).backend_tokenizer(connection))
        if chat.group_id:
            turn = replace(turn, speaker=says)
        if run is None:
            run = RunningGeneration(new_id(), chat.id, kind)
        run.kind = kind
        plan = Plan(
            run=run,
            chat=chat,
            connection=connection,
            kind=kind,
            anchor=anchor,
            prompt=Prompt(kind="chat"),
            tools=(),
            registry=self.tools,
            speaker=says,
            members=members,
        )
        try:
            turn = self.prompts.intercepted(turn)
        except GenerationAborted as aborted:
            plan.aborted = aborted
            return plan
        built = self.prompts.build_serialized(turn)
        prepared = built if isinstance(built, PreparedTurn) else PreparedTurn(built)
        plan.prompt = self.prompts.events.prompt_ready(
            prepared.prompt, chat_id=chat.id, kind=kind.value, dry_run=False
        )
        plan.request = prepared.request
        if anchor is not None and kind is GenerationType.CONTINUE:
            plan.continued_text = anchor.content
        plan.continued_stripped = prefill and connection.api is Api.ANTHROPIC
        offer_tools(plan, prepared, turn, self.user_tools, self.chats)
        return plan
