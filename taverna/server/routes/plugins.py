"""Plugins: which are installed, what each may touch; and the events they (and Quick
Replies) can follow."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
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


# What a person who does not manage the server is told of a plugin that failed to load.
NOT_LOADED = "it could not be loaded (an admin sees why)"


@router.get("/api/plugins", response_model=PluginsOut)
async def list_plugins(request: Request, ctx: AppContext = Depends(context)) -> PluginsOut:
    """The installed plugins (entry points of group `taverna`), each with its declared grants
    (none by default) and, when it could not be loaded, why. The plugins are the server's:
    with accounts everyone sees what may touch their chats; why one failed to load (which
    may name the server's files) only an admin does."""
    session = getattr(request.state, "session", None)
    manages = "accounts" not in ctx.services or (session is not None and session.account.admin)
    plugins = [PluginOut(**info.to_json()) for info in ctx.plugins.list()]
    if not manages:
        plugins = [p.model_copy(update={"error": NOT_LOADED}) if p.error else p for p in plugins]
    return PluginsOut(
        plugins=plugins,
        grants=[g.value for g in Grant],
        events=[e.value for e in EventName],
    )
