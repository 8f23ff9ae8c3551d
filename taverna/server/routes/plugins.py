"""Plugins: which are installed, what each may touch; and the events they (and Quick
Replies) can follow."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from pydantic import BaseModel

from taverna.server.context import AppContext, context
from taverna.services.plugins import EventName, Grant

router = APIRouter(tags=["plugins"])


class PluginOut(BaseModel):
    name: str
    module: str
    description: str
    version: str
    distribution: str
    grants: list[str]
    hooks: list[str]
    error: str | None = None


class PluginsOut(BaseModel):
    """The plugins by name, every grant a plugin can declare, and the events."""

    plugins: list[PluginOut]
    grants: list[str]
    events: list[str]


@router.get("/api/plugins", response_model=PluginsOut)
async def list_plugins(ctx: AppContext = Depends(context)) -> PluginsOut:
    """The installed plugins (entry points of group `taverna`), each with its declared grants
    (none by default) and, when it could not be loaded, why."""
    return PluginsOut(
        plugins=[PluginOut(**info.to_json()) for info in ctx.plugins.list()],
        grants=[g.value for g in Grant],
        events=[e.value for e in EventName],
    )
