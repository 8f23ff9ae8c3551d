"""Search for messages: across the chats of the account asking, or in one chat."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel

from taverna.server.context import AppContext, context, current_user
from taverna.services.chats.search import MAX_QUERY, MAX_RESULTS, SearchResult

router = APIRouter(prefix="/api", tags=["search"])

QueryText = Query(
    ..., max_length=MAX_QUERY, description="words to find (each anywhere in a message)"
)
Limit = Query(50, ge=1, le=MAX_RESULTS, description="at most this many messages, newest first")


class SnippetPieceOut(BaseModel):
    text: str
    match: bool


class SearchHitOut(BaseModel):
    """A message a search found; `on_path`: on its chat's active path (else opening it
    switches the path to it)."""

    chat_id: str
    chat_title: str
    node_id: str
    parent_id: str | None
    role: str
    speaker: str
    position: int
    hidden: bool
    on_path: bool
    snippet: list[SnippetPieceOut]


def _out(result: SearchResult) -> SearchHitOut:
    return SearchHitOut(
        chat_id=result.chat_id,
        chat_title=result.chat_title,
        node_id=result.node_id,
        parent_id=result.parent_id,
        role=result.role,
        speaker=result.speaker,
        position=result.position,
        hidden=result.hidden,
        on_path=result.on_path,
        snippet=[SnippetPieceOut(text=text, match=match) for text, match in result.snippet],
    )


@router.get("/search", response_model=list[SearchHitOut])
def search_chats(
    request: Request,
    q: str = QueryText,
    limit: int = Limit,
    ctx: AppContext = Depends(context),
) -> list[SearchHitOut]:
    """The newest messages of every chat holding every word of `q` (case and accents
    aside); deleted messages and chats never."""
    found = ctx.search().search(q, owner=current_user(request), limit=limit)
    return [_out(result) for result in found]


@router.get("/chats/{chat_id}/search", response_model=list[SearchHitOut])
def search_chat(
    chat_id: str,
    request: Request,
    q: str = QueryText,
    limit: int = Limit,
    ctx: AppContext = Depends(context),
) -> list[SearchHitOut]:
    """The same search, in one chat (on any of its branches)."""
    found = ctx.search().search(q, owner=current_user(request), chat_id=chat_id, limit=limit)
    return [_out(result) for result in found]
