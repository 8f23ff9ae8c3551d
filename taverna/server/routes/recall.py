"""Recall by meaning's settings (SillyTavern's `extension_settings.vectors`)."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Body, Depends, Request

from taverna.server.context import AppContext, context, current_user
from taverna.services.recall_settings import change_recall_settings, read_recall_settings

router = APIRouter(prefix="/api/recall-settings", tags=["recall"])


@router.get("")
def read_settings(request: Request, ctx: AppContext = Depends(context)) -> dict[str, Any]:
    """The recall settings in force, under SillyTavern's names."""
    return read_recall_settings(ctx.store, current_user(request))


@router.put("")
async def write_settings(
    request: Request,
    body: dict[str, Any] = Body(..., description="SillyTavern's `extension_settings.vectors`"),
    ctx: AppContext = Depends(context),
) -> dict[str, Any]:
    """Change recall settings (keys left out keep their values; keys SillyTavern has and
    this product does not use are kept). Turning recall on starts embedding the backlog."""
    changed = await asyncio.to_thread(
        change_recall_settings, ctx.store, body, current_user(request)
    )
    if ctx.embeddings is not None:
        ctx.embeddings.wake()
    return changed
