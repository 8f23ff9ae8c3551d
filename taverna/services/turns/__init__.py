"""Generations: send, regenerate, swipe, continue, impersonate and stop, written into the tree.

A generation builds its prompt from the chat's active path (through a prompt
builder: the assembly engine, or any callable of the same shape), streams the
answer from the chat's connection, and on success has `ChatService` store the
result in one transaction, with its generation info (provider, model, timing, token
usage): this module never writes the tree itself, so a generated swipe follows the
rules of any swipe. On failure or stop the tree is left as it was; what had
streamed is kept as a *draft* (a library document of kind `draft`) that the person
can keep (`keep_draft`, which stores it where it would have gone) or drop.

Background runs and re-attaching (for the server)
-------------------------------------------------
Every start method returns at once with a `RunningGeneration`; the work runs as an
asyncio task of its own, so it finishes and saves even if nobody listens. The
`GenerationRegistry` keeps every running generation (and finished ones for
`keep_finished` seconds) with all its events so far:

    run = await service.send(chat_id, "Hello")          # starts the task
    async for index, event in run.follow():              # replay, then live
        ...                                              # TextDelta, ..., Completed
    # a reconnecting client:
    run = service.registry.get(generation_id)            # or .for_chat(chat_id)
    async for index, event in run.follow(since=last_index + 1): ...
    await service.stop(generation_id)                    # closes the model connection

Events are the provider events (`TextDelta`, `ReasoningDelta`, `ToolCall`, `Usage`,
`Finish`, `StreamError`) plus `Queued` (while its prompt waits to be built), `Started`,
`Posted` (a send's message is stored), `ToolResult` and, always last, `Completed`.
The registry is in-process by default; `SharedRegistry` (shared_runs.py) shares runs,
their events and Stop between server processes through Redis.
"""

# a prompt's ledger, readable by a person (the inspector, `taverna chat`'s /prompt)
from taverna.engine.assembly.ledger import render_ledger

# the model's events a run carries, beside its own (Started, ToolResult, Completed)
from taverna.providers.events import ReasoningDelta, StreamError, TextDelta, ToolCall
from taverna.services.turns.drafts import DRAFT_KIND
from taverna.services.turns.kinds import ASKED
from taverna.services.turns.planning import Ask, Said, asked
from taverna.services.turns.reply_text import trim_at_stop
from taverna.services.turns.runs import (
    Completed,
    Draft,
    Ending,
    GenerationEvent,
    GenerationRegistry,
    Posted,
    Queued,
    RunningGeneration,
    Started,
    ToolResult,
)
from taverna.services.turns.service import GenerationService
from taverna.services.turns.tool_rounds import MAX_TOOL_ROUNDS
from taverna.services.turns.turn import WHOLE_PATH, PreparedTurn, PromptBuilder, TurnRequest

__all__ = [
    "ASKED",
    "DRAFT_KIND",
    "MAX_TOOL_ROUNDS",
    "WHOLE_PATH",
    "Ask",
    "Completed",
    "Draft",
    "Ending",
    "GenerationEvent",
    "GenerationRegistry",
    "GenerationService",
    "Posted",
    "PreparedTurn",
    "PromptBuilder",
    "Queued",
    "ReasoningDelta",
    "RunningGeneration",
    "Said",
    "Started",
    "StreamError",
    "TextDelta",
    "ToolCall",
    "ToolResult",
    "TurnRequest",
    "asked",
    "render_ledger",
    "trim_at_stop",
]
