"""Generations: start one in a chat, follow its events over SSE (replayable), stop it; drafts."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import asdict, is_dataclass
from typing import Any, Literal

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from taverna.errors import NotFound, TavernaError
from taverna.server import usecases
from taverna.server.context import AppContext, backed_up, context, current_user
from taverna.server.openapi import event_stream_responses
from taverna.server.schemas import (
    NAME_MAX,
    TEXT_MAX,
    ChatRevision,
    RevisionIn,
    RoundOut,
    Strict,
    TaskOut,
)
from taverna.server.session_streams import while_signed_in
from taverna.services.turns import (
    Completed,
    Ending,
    GenerationService,
    Posted,
    Queued,
    ReasoningDelta,
    RunningGeneration,
    Started,
    TextDelta,
    ToolCall,
    ToolResult,
    asked,
)
from taverna.services.turns.runs import GroupRound

router = APIRouter(tags=["generation"], dependencies=[Depends(backed_up)])


class GenerateIn(Strict):
    kind: Literal["normal", "regenerate", "swipe", "continue", "impersonate"] = "normal"
    text: str | None = Field(default=None, max_length=TEXT_MAX)
    image: str | None = Field(
        default=None, max_length=200, description="a stored picture's URL, sent with the message"
    )
    revision: ChatRevision
    member: str | None = Field(
        default=None, max_length=NAME_MAX, description="in a group chat: the member who speaks"
    )
    connection: str | None = Field(
        default=None, max_length=NAME_MAX, description="the connection to use (else the default)"
    )


class GenerationStarted(BaseModel):
    """A started generation: follow `task`'s events; read the chat once they say the
    person's message is stored (`Posted`), or at once after an edit-and-resend."""

    task: TaskOut
    position: int = Field(
        default=0,
        ge=0,
        description="how many prompt builds go before this one (0: it has started); "
        "while it waits its task is `queued` and its events say when the place changes",
    )
    round: RoundOut | None = Field(
        default=None, description="in a group chat: the round this reply begins"
    )


class DraftOut(BaseModel):
    id: str
    kind: str
    anchor_id: str | None
    text: str
    reason: str
    # Why the reply failed, as the model API's failure kind (`reason` is the English).
    cause: str | None = None
    # A finished reply (or a draft) the database could not take yet: it waits on the
    # server's disk and is stored as soon as the database answers ("saving…").
    saving: bool = False


class StopOut(BaseModel):
    outcome: str | None
    draft_id: str | None = None


class ResendIn(Strict):
    content: str = Field(max_length=TEXT_MAX)
    revision: ChatRevision


async def generation(ctx: AppContext = Depends(context)) -> GenerationService:
    service = ctx.services.get("generation")
    if service is None:
        raise TavernaError(
            "generation is not available in this server", code="generation_unavailable"
        )
    assert isinstance(service, GenerationService)
    return service


def remember(ctx: AppContext, run: RunningGeneration) -> RunningGeneration:
    """Note a started generation, so a shutting-down server can stop it and keep its text."""
    runs: set[str] = ctx.services.setdefault("runs", set())
    runs.add(run.id)
    # The stored reply's prompt is kept and its chat backed up, whoever follows the stream.
    task = ctx.follow_up(run)
    ctx.services.setdefault("settling", set()).add(task)
    task.add_done_callback(ctx.services["settling"].discard)
    return run


def round_out(found: GroupRound) -> RoundOut:
    return RoundOut(
        id=found.id,
        chat_id=found.chat_id,
        speakers=list(found.speakers),
        tasks=[task_out(run) for run in found.runs],
        done=found.done,
    )


def task_out(run: RunningGeneration) -> TaskOut:
    return TaskOut(
        id=run.id,
        kind=run.kind.value,
        chat_id=run.chat_id,
        status=usecases.task_status(run),
    )


@router.post("/api/chats/{chat_id}/generate", response_model=GenerationStarted, status_code=202)
async def generate(
    chat_id: str,
    body: GenerateIn,
    request: Request,
    service: GenerationService = Depends(generation),
    ctx: AppContext = Depends(context),
) -> GenerationStarted:
    """Start a generation; it runs on its own and is saved even if nobody follows it.

    The answer is the run and its place: the revision check, the write, the path's end
    and the prompt are one hop to the generation service's thread, and nothing else is
    read for the answer (the page reads the chat's end once the message is stored)."""
    # In a group chat `member` has that member answer (or write the candidate).
    ask = asked(
        body.kind,
        text=body.text or "",
        image=body.image,
        connection=body.connection,
        revision=body.revision,
        member=body.member,
        account=current_user(request),
    )
    return _started(ctx, await service.generate(chat_id, ask))


def _started(ctx: AppContext, run: RunningGeneration) -> GenerationStarted:
    """The answer to a start: the task to follow and its place in the build queue."""
    return GenerationStarted(task=task_out(remember(ctx, run)), position=run.queued or 0)


@router.post(
    "/api/chats/{chat_id}/messages/{node_id}/resend",
    response_model=GenerationStarted,
    status_code=202,
)
async def edit_and_resend(
    chat_id: str,
    node_id: str,
    body: ResendIn,
    request: Request,
    ctx: AppContext = Depends(context),
    service: GenerationService = Depends(generation),
) -> GenerationStarted:
    """Edit a user message as a new sibling (the old turn stays a branch) and answer it.
    The edit is stored when this answers: the page reads the chat's end then."""
    edited = await asyncio.to_thread(
        ctx.chats.edit_and_resend, chat_id, node_id, body.content, revision=body.revision
    )
    if edited.chat.group_id:
        # a group answers the edited message with a round, as it answers a new one
        found = await service.round(chat_id, "", started=lambda run: remember(ctx, run))
        if found.runs:
            first = task_out(found.runs[0])
            return GenerationStarted(task=first, round=round_out(found))
    ask = asked("normal", account=current_user(request))
    return _started(ctx, await service.generate(chat_id, ask))


def _event(index: int, event: Any) -> str | None:
    """One generation event as an SSE frame; `id` lets a reconnecting browser resume."""
    data: dict[str, Any]
    if type(event) is TextDelta:
        # the commonest by far: its JSON written directly
        text = json.dumps(event.text, ensure_ascii=False)
        return f'id: {index}\nevent: delta\ndata: {{"text": {text}}}\n\n'
    if isinstance(event, TextDelta):
        name, data = "delta", {"text": event.text}
    elif isinstance(event, ReasoningDelta):
        name, data = "reasoning", {"text": event.text}
    elif isinstance(event, ToolCall | ToolResult | Queued | Started | Posted):
        name, data = "status", {"type": type(event).__name__, **_plain(event)}
    elif isinstance(event, Completed):
        # a reply waiting in the journal for the database is done: the page says "saving…"
        if event.outcome in (Ending.SAVED, Ending.IMPERSONATED, Ending.SAVING):
            name = "done"
        elif event.outcome is Ending.STOPPED:
            name = "cancelled"
        else:
            name = "error"
        data = {
            "outcome": event.outcome.value,
            "text": event.text,
            "node_id": event.node_id,
            "draft_id": event.draft_id,
            "message": event.error,
            "cause": event.cause,
        }
    else:
        return None
    return f"id: {index}\nevent: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _plain(event: Any) -> dict[str, Any]:
    if is_dataclass(event) and not isinstance(event, type):
        return {k: (v.value if hasattr(v, "value") else v) for k, v in asdict(event).items()}
    return {}


@router.get(
    "/api/tasks/{task_id}/events",
    response_class=StreamingResponse,
    # A generation's events, or a folder import's (progress, done, error).
    responses=event_stream_responses(
        "status", "delta", "reasoning", "done", "cancelled", "error", "progress"
    ),
)
async def follow_task(
    task_id: str,
    request: Request,
    since: int | None = Query(
        None, ge=0, le=10_000_000, description="the index of the first event to send"
    ),
    last_event_id: str | None = Header(default=None, max_length=20),
    ctx: AppContext = Depends(context),
    service: GenerationService = Depends(generation),
) -> StreamingResponse:
    """Server-sent events of a task (a generation or an import): everything so far, then
    live, until it ends. `Last-Event-ID` (or `since`) resumes after a reconnect."""
    start = since or 0
    if last_event_id and last_event_id.isdigit():
        start = int(last_event_id) + 1
    try:
        run = service.registry.get(task_id)
    except NotFound:
        return _import_stream(request, ctx, task_id, start)

    async def frames() -> AsyncIterator[str]:
        yield "retry: 1000\n\n"
        # What is there at once goes out in one write: each event still a frame with
        # its own id, so a page resumes after any of them.
        async for batch in run.batches(start):
            text = "".join([frame for index, event in batch if (frame := _event(index, event))])
            if text:
                yield text

    return StreamingResponse(
        while_signed_in(request, frames()), media_type="text/event-stream", headers=SSE_HEADERS
    )


SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def _import_stream(
    request: Request, ctx: AppContext, task_id: str, start: int
) -> StreamingResponse:
    jobs = ctx.services.get("imports")
    if jobs is None:
        raise NotFound("no such task", code="no_such_task")
    job = jobs.get(task_id)

    async def frames() -> AsyncIterator[str]:
        yield "retry: 1000\n\n"
        async for index, name, data in job.follow(start):
            yield f"id: {index}\nevent: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"

    return StreamingResponse(
        while_signed_in(request, frames()), media_type="text/event-stream", headers=SSE_HEADERS
    )


@router.get("/api/tasks/{task_id}", response_model=TaskOut)
def get_task(task_id: str, service: GenerationService = Depends(generation)) -> TaskOut:
    return task_out(service.registry.get(task_id))


@router.post("/api/tasks/{task_id}/stop", response_model=StopOut)
async def stop_task(task_id: str, service: GenerationService = Depends(generation)) -> StopOut:
    """Stop a generation: the model connection closes; what streamed is kept as a draft."""
    result = await service.stop(task_id)
    return StopOut(
        outcome=result.outcome.value if result else None,
        draft_id=result.draft_id if result else None,
    )


@router.get("/api/chats/{chat_id}/drafts", response_model=list[DraftOut])
def list_drafts(
    chat_id: str,
    ctx: AppContext = Depends(context),
    service: GenerationService = Depends(generation),
) -> list[DraftOut]:
    ctx.chats.get_chat(chat_id)
    # What waits in the journal first: the database is back (it answered), so the
    # journal is replayed now rather than at its next look.
    waiting = service.waiting(chat_id)
    drafts = [
        DraftOut(
            id=d.id,
            kind=d.kind.value,
            anchor_id=d.anchor_id,
            text=d.text,
            reason=d.reason,
            cause=d.cause,
        )
        for d in service.drafts(chat_id)
    ]
    return drafts + [
        DraftOut(
            id=entry["id"],
            kind=entry["kind"],
            anchor_id=entry.get("anchor_id"),
            text=entry["text"],
            reason=entry.get("reason") or "",
            cause=entry.get("cause"),
            saving=True,
        )
        for entry in waiting
    ]


@router.post("/api/drafts/{draft_id}/keep", status_code=204)
def keep_draft(
    draft_id: str,
    body: RevisionIn,
    ctx: AppContext = Depends(context),
    service: GenerationService = Depends(generation),
) -> Response:
    """Store a draft in its chat, which must still be at the revision the page read."""
    ctx.chat_written(service.keep_draft(draft_id, revision=body.revision).chat.id)
    return Response(status_code=204)


@router.delete("/api/drafts/{draft_id}", status_code=204)
def drop_draft(draft_id: str, service: GenerationService = Depends(generation)) -> Response:
    service.drop_draft(draft_id)
    return Response(status_code=204)
