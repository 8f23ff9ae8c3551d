"""A chat's summaries (read, edit, remove, make now) and the Summarize settings."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends, Request
from pydantic import BaseModel, Field

from taverna.errors import TavernaError
from taverna.server.context import AppContext, backed_up, context, current_user
from taverna.server.openapi import upstream_error
from taverna.server.schemas import TEXT_MAX, ChatRevision, QueryRevision, Strict
from taverna.services.memory.summaries import SummaryInfo, SummaryService, hidden_count
from taverna.services.turns.summary_generation import SummaryGenerator

router = APIRouter(tags=["summaries"], dependencies=[Depends(backed_up)])


class SummaryItemOut(BaseModel):
    """One summary on the chat's path: its text, the message it belongs to, its number
    among the path's summaries (1 the oldest) and how many messages it covers."""

    text: str
    node_id: str | None
    number: int
    covers: int


class ChatSummariesOut(BaseModel):
    """The summary in force at the end of the path (None: none) and every summary on it.

    `hides`: with "hide what a summary covers" on, the path's first `hides` messages are
    left out of the prompt, covered by the summary in force."""

    current: SummaryItemOut | None
    along: list[SummaryItemOut]
    revision: int
    hides: int = 0


class SummaryIn(Strict):
    text: str = Field(min_length=1, max_length=TEXT_MAX)
    revision: ChatRevision


class SummaryMadeOut(ChatSummariesOut):
    """A summary just made: `cut` when the reply stopped at the summary's length limit."""

    made: str
    node_id: str | None
    cut: bool
    raw: bool


def _item(info: SummaryInfo) -> SummaryItemOut:
    return SummaryItemOut(
        text=info.text, node_id=info.node_id, number=info.number, covers=info.covers
    )


def _summaries(ctx: AppContext, chat_id: str, owner: str = "") -> ChatSummariesOut:
    service = SummaryService(ctx.chats)
    current = service.current(chat_id)
    hides = 0
    if current is not None and ctx.summaries is not None:
        hides = hidden_count(current, ctx.summaries.settings(owner))
    return ChatSummariesOut(
        current=_item(current) if current else None,
        along=[_item(i) for i in service.along(chat_id)],
        revision=ctx.chats.get_chat(chat_id).revision,
        hides=hides,
    )


@router.get("/api/chats/{chat_id}/summary", response_model=ChatSummariesOut)
def read_summary(
    chat_id: str, request: Request, ctx: AppContext = Depends(context)
) -> ChatSummariesOut:
    """The summary in force at the end of the active path and every summary on the path."""
    return _summaries(ctx, chat_id, current_user(request))


@router.put("/api/chats/{chat_id}/summary", response_model=ChatSummariesOut)
def edit_summary(
    chat_id: str, body: SummaryIn, ctx: AppContext = Depends(context)
) -> ChatSummariesOut:
    """Change the text of the summary in force (a chat without one gets it at its end)."""
    SummaryService(ctx.chats).edit(chat_id, body.text, revision=body.revision)
    return _summaries(ctx, chat_id)


@router.delete("/api/chats/{chat_id}/summary", response_model=ChatSummariesOut)
def remove_summary(
    chat_id: str, revision: QueryRevision, ctx: AppContext = Depends(context)
) -> ChatSummariesOut:
    """Remove the summary in force; the one before it is in force again."""
    SummaryService(ctx.chats).remove(chat_id, revision=revision)
    return _summaries(ctx, chat_id)


@router.post(
    "/api/chats/{chat_id}/summary/generate",
    response_model=SummaryMadeOut,
    responses=upstream_error(),
)
async def make_summary(
    chat_id: str, request: Request, ctx: AppContext = Depends(context)
) -> SummaryMadeOut:
    """Make a summary of the chat now with the Summarize settings, and record it."""
    generator = _generator(ctx)
    ctx.chats.get_chat(chat_id)  # 404 before any model is asked
    settings = generator.settings(current_user(request))
    outcome = await generator.summarize(chat_id, settings=settings)
    base = _summaries(ctx, chat_id)
    return SummaryMadeOut(
        **base.model_dump(),
        made=outcome.text,
        node_id=outcome.node_id,
        cut=outcome.cut,
        raw=outcome.raw,
    )


@router.get("/api/summary-settings")
def read_summary_settings(request: Request, ctx: AppContext = Depends(context)) -> dict[str, Any]:
    """The Summarize settings under SillyTavern's names (`extension_settings.memory`)."""
    return _generator(ctx).settings(current_user(request)).to_st()


@router.put("/api/summary-settings")
def write_summary_settings(
    request: Request,
    body: dict[str, Any] = Body(..., description="SillyTavern's `extension_settings.memory`"),
    ctx: AppContext = Depends(context),
) -> dict[str, Any]:
    """Change the Summarize settings (keys left out keep their values; keys SillyTavern
    does not know are kept)."""
    return _generator(ctx).change_settings(body, current_user(request)).to_st()


def _generator(ctx: AppContext) -> SummaryGenerator:
    if ctx.summaries is None:
        raise TavernaError(
            "summaries are not available in this server", code="summaries_unavailable"
        )
    return ctx.summaries
