"""The model's rounds of one generation: each round is a request streamed back; when the
model calls tools, they run and their answers make the next round's prompt, at most
`MAX_TOOL_ROUNDS` times. Also what the tools' scripts change, which the reply records."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import aiohttp

from taverna.engine.assembly.context import GenerationType
from taverna.model.chat import Chat, Node
from taverna.model.prompt import Prompt, PromptMessage, Role
from taverna.providers.builders import build_request, stream_parser
from taverna.providers.events import (
    Finish,
    ReasoningDelta,
    StreamError,
    TextDelta,
    ToolCall,
    Usage,
)
from taverna.providers.request import PostProcessing, RequestOptions
from taverna.providers.transport import Timeouts
from taverna.services.chats.generated_reply import ToolStep
from taverna.services.chats.service import ChatService
from taverna.services.connections.service import ConnectionService
from taverna.services.plugins.tools import Tool, ToolRegistry
from taverna.services.turns.plan import Plan
from taverna.services.turns.runs import ToolResult
from taverna.services.turns.turn import PreparedTurn, TurnRequest

# algo-providers.md §12 [newer]: at most five tool rounds, then a plain answer is required
MAX_TOOL_ROUNDS = 5
# The kinds a model may call tools for.
_CALLS_TOOLS = (GenerationType.NORMAL, GenerationType.REGENERATE)

UserTools = Callable[[Chat, dict[str, Any]], Sequence[Tool]]


def offer_tools(
    plan: Plan,
    prepared: PreparedTurn,
    turn: TurnRequest,
    user_tools: UserTools | None,
    chats: ChatService,
) -> None:
    """Set the tools `plan`'s model is offered: the prompt's, and, when the preset turns
    function calling on, the chat's own user tools, whose scripts set this generation's
    copy of the chat variables."""
    if plan.kind not in _CALLS_TOOLS:
        return
    plan.tools = prepared.tools
    if not prepared.function_calling or plan.connection.api.is_text_completion:
        return
    variables = _turn_variables(plan.prompt, turn, plan.anchor, chats)
    base = dict(variables)
    own = list(user_tools(plan.chat, variables)) if user_tools is not None else []
    if own:
        plan.registry = ToolRegistry([*plan.registry.tools(), *own])
        plan.tools = tuple(dict.fromkeys([*plan.tools, *(t.spec.name for t in own)]))
        plan.base_variables = base
        plan.tool_variables = variables


def _turn_variables(
    prompt: Prompt, turn: TurnRequest, anchor: Node | None, chats: ChatService
) -> dict[str, Any]:
    """The chat variables a reply starts from: the prompt's (after its macros), else
    those in force where it goes (before the replaced reply, for a regenerate)."""
    found = prompt.state.get("variables")
    if isinstance(found, Mapping):
        return dict(found)
    if turn.kind is GenerationType.REGENERATE and anchor is not None:
        if anchor.parent_id is None:
            return dict(turn.chat.base_state.variables)
        return dict(chats.state_at(turn.chat.id, anchor.parent_id).variables)
    return dict(turn.read(1).state.variables)


@dataclass
class Heard:
    """What the model sent over every round of one generation, so far."""

    streamed: list[str] = field(default_factory=list)  # every round's text: what a draft keeps
    reply: list[str] = field(default_factory=list)  # the text of the last round: the reply
    reasoning: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish: Finish | None = None
    first_token: float | None = None  # perf_counter's time of the first text
    error: StreamError | None = None  # the stream failed: nothing more is asked

    @property
    def text(self) -> str:
        return "".join(self.streamed)

    def hear(self, event: object, calls: list[ToolCall]) -> None:
        """Take one event of a round's stream (a tool call goes to `calls`)."""
        if isinstance(event, TextDelta):
            self.first_token = self.first_token or time.perf_counter()
            self.reply.append(event.text)
            self.streamed.append(event.text)
        elif isinstance(event, ReasoningDelta):
            self.reasoning.append(event.text)
        elif isinstance(event, ToolCall):
            calls.append(event)
        elif isinstance(event, Usage):
            kept = self.usage
            self.usage = Usage(
                _add(kept.input_tokens, event.input_tokens),
                _add(kept.output_tokens, event.output_tokens),
                _add(kept.cached_tokens, event.cached_tokens),
                _add(kept.cache_write_tokens, event.cache_write_tokens),
            )
        elif isinstance(event, Finish):
            self.finish = event
        elif isinstance(event, StreamError):
            self.error = event


async def converse(
    plan: Plan,
    heard: Heard,
    connections: ConnectionService,
    *,
    client: aiohttp.ClientSession | None,
    timeouts: Timeouts,
) -> None:
    """Ask the model, running the tools it calls between rounds, until it answers
    without calling any (or the stream fails: `heard.error`). `connections`: the chat's
    account's."""
    base_url, key = await connections.endpoint(plan.connection)
    prompt = plan.prompt
    for round_number in range(MAX_TOOL_ROUNDS + 1):
        offer = plan.tools if round_number < MAX_TOOL_ROUNDS else ()
        calls: list[ToolCall] = []
        heard.reply = []
        options = round_options(connections, plan, offer)
        request = build_request(prompt, plan.connection.api, options, base_url=base_url, key=key)
        plan.run.requests.append((request.url, request.body))
        # each round is a request of its own, counted against the account's quota
        async for event in connections.stream(
            request,
            stream_parser(plan.connection.api),
            client=client,
            secret=key,
            timeouts=timeouts,
        ):
            plan.run.publish(event)
            heard.hear(event, calls)
            if heard.error is not None:
                return
        if not calls or not offer:
            return
        prompt = await _tool_round(plan, prompt, "".join(heard.reply), calls)


def round_options(
    connections: ConnectionService, plan: Plan, tools: Sequence[str]
) -> RequestOptions:
    """The options of one round's request: the connection's, the preset's and the names."""
    chat = plan.chat
    members = plan.members or tuple(c.name for c in chat.characters)
    preset = dict(plan.request)
    # what the connection sets itself wins over the preset
    if "use_system_prompt" in plan.connection.options:
        preset.pop("use_system_prompt", None)
    if plan.connection.post_processing is not PostProcessing.NONE:
        preset.pop("post_processing", None)
    return connections.request_options(
        plan.connection,
        user_name=chat.user_name or "User",
        char_name=plan.speaker or (members[0] if members else ""),
        group_members=members if (len(members) > 1 or plan.members) else (),
        impersonate=plan.kind is GenerationType.IMPERSONATE,
        tools=plan.registry.specs(tools),
        **preset,
    )


async def _tool_round(plan: Plan, prompt: Prompt, said: str, calls: list[ToolCall]) -> Prompt:
    """Run the calls and give the model its answers: the prompt of the next round."""
    messages = list(prompt.messages)
    messages.append(
        PromptMessage(
            Role.ASSISTANT,
            said,
            tool_calls=tuple({"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls),
            source="tool-call",
        )
    )
    if plan.posted is not None:
        await plan.posted  # a tool's script may write the chat: the message comes first
    for call in calls:
        result = await plan.registry.call(call.name, call.arguments)
        plan.tool_steps.append((said if call is calls[0] else "", call, result))
        plan.run.publish(ToolResult(call.id, call.name, result))
        messages.append(
            PromptMessage(Role.TOOL, result, tool_call_id=call.id, source="tool-result")
        )
    return replace(prompt, messages=tuple(messages), prefill="")


def with_tool_variables(plan: Plan, turn_state: dict[str, Any]) -> dict[str, Any]:
    """The turn's state with what the tools' scripts set and removed: the reply
    records it, so it follows that reply and not the message it answers (a regenerated
    or swiped reply starts again from that message's variables)."""
    if not plan.tool_steps or plan.base_variables is None or plan.tool_variables is None:
        return turn_state
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


def tool_steps(plan: Plan) -> list[ToolStep]:
    """The tool calls the model made for this reply, to store before it."""
    return [
        ToolStep(said, call.id, call.name, call.arguments, result)
        for said, call, result in plan.tool_steps
    ]


def _add(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b
