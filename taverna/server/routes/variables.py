"""Global STscript variables: read and replace (chat variables are under each chat)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from pydantic import Field

from taverna.server.context import AppContext, context, current_user
from taverna.server.schemas import NAME_MAX, Strict, VariableValue
from taverna.services.scripts.runner import ScriptService

router = APIRouter(prefix="/api/variables", tags=["variables"])


class GlobalVariablesIn(Strict):
    """The global variables (every chat), replacing the old ones."""

    global_: dict[Annotated[str, Field(min_length=1, max_length=NAME_MAX)], VariableValue] = Field(
        alias="global", max_length=10_000
    )


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
