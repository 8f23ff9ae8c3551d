"""Global STscript variables: read and replace (chat variables are under each chat)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from taverna.server.context import AppContext, context, current_user
from taverna.server.schemas import GlobalVariablesIn
from taverna.services.scripts.runner import ScriptService

router = APIRouter(prefix="/api/variables", tags=["variables"])


@router.get("", response_model=dict[str, object])
def global_variables(request: Request, ctx: AppContext = Depends(context)) -> dict[str, object]:
    """The global variables (`{{getglobalvar}}`, `/getglobalvar`)."""
    return dict(ScriptService(ctx.chats, owner=current_user(request)).global_variables())


@router.put("", response_model=dict[str, object])
def set_global_variables(
    body: GlobalVariablesIn, request: Request, ctx: AppContext = Depends(context)
) -> dict[str, object]:
    """Replace the global variables."""
    scripts = ScriptService(ctx.chats, owner=current_user(request))
    scripts.write_global_variables(body.global_)
    return dict(scripts.global_variables())
