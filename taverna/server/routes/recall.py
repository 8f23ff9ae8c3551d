"""Recall by meaning's settings (SillyTavern's `extension_settings.vectors`)."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Body, Depends

from taverna.server.context import AppContext, context, library
from taverna.services.library.service import LibraryService
from taverna.services.memory.recall_keys import RecallKeys
from taverna.services.memory.recall_settings import RecallSettingsService

router = APIRouter(prefix="/api/recall-settings", tags=["recall"])


def _settings(ctx: AppContext, account: LibraryService) -> RecallSettingsService:
    return RecallSettingsService(account, RecallKeys(ctx.data_dir))


@router.get("")
def read_settings(
    ctx: AppContext = Depends(context), account: LibraryService = Depends(library)
) -> dict[str, Any]:
    """The recall settings in force, under SillyTavern's names, with `api_key_hint`: the
    last characters of the person's own key for their endpoint ("" when none)."""
    return _settings(ctx, account).read()


@router.put("")
async def write_settings(
    body: dict[str, Any] = Body(..., description="SillyTavern's `extension_settings.vectors`"),
    ctx: AppContext = Depends(context),
    account: LibraryService = Depends(library),
) -> dict[str, Any]:
    """Change recall settings (keys left out keep their values; keys SillyTavern has and
    this product does not use are kept). Turning recall on starts embedding the backlog.
    `api_key`: the person's own key for the endpoint they name, sent there only (the
    server's key goes only to the operator's endpoint); never read back, "" removes it."""
    changed = await asyncio.to_thread(_settings(ctx, account).change, body)
    if ctx.embeddings is not None:
        ctx.embeddings.wake()
    return changed
