"""Connection profiles: list, keep, remove, and switch a chat to one in one request.

A profile is named in the path by its name, percent-encoded.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, Field

from taverna.server import usecases
from taverna.server.context import AppContext, context, current_user
from taverna.server.schemas import NAME_MAX, TEXT_MAX, ChatOut, Strict
from taverna.services.connections.profiles import Profile, Profiles
from taverna.services.turns.profile_switch import switch_profile

router = APIRouter(tags=["connection profiles"])


class ProfileIn(Strict):
    connection: str = Field(min_length=1, max_length=NAME_MAX)
    mode: Literal["cc", "tc"] = "cc"
    model: str = Field(default="", max_length=NAME_MAX)
    preset: str = Field(default="", max_length=NAME_MAX)
    instruct: str = Field(default="", max_length=NAME_MAX)
    context: str = Field(default="", max_length=NAME_MAX)
    sysprompt: str = Field(default="", max_length=NAME_MAX)
    sysprompt_enabled: bool | None = None
    tokenizer: str = Field(default="", max_length=64, description="SillyTavern's tokenizer key")
    stop_strings: list[str] | None = Field(
        default=None, max_length=100, description="null: leave the stop strings as they are"
    )
    start_reply_with: str = Field(default="", max_length=TEXT_MAX)


class ProfileOut(BaseModel):
    name: str
    connection: str
    mode: str
    model: str
    preset: str
    instruct: str
    context: str
    sysprompt: str
    sysprompt_enabled: bool | None
    tokenizer: str
    stop_strings: list[str] | None
    start_reply_with: str


class SwitchIn(Strict):
    profile: str = Field(min_length=1, max_length=NAME_MAX)
    revision: int


class SwitchOut(BaseModel):
    chat: ChatOut
    applied: list[str] = Field(description="the parts the profile set")
    missing: list[str] = Field(description="the parts it names that the library lacks")


def _out(profile: Profile) -> ProfileOut:
    data: dict[str, Any] = profile.to_json()
    return ProfileOut(**{k: data[k] for k in ProfileOut.model_fields})


def _profiles(request: Request, ctx: AppContext) -> Profiles:
    return ctx.connections_of(current_user(request)).profiles()


@router.get("/api/connection-profiles", response_model=list[ProfileOut])
def list_profiles(request: Request, ctx: AppContext = Depends(context)) -> list[ProfileOut]:
    return [_out(p) for p in _profiles(request, ctx).list()]


@router.put("/api/connection-profiles/{name:path}", response_model=ProfileOut)
def put_profile(
    name: str, body: ProfileIn, request: Request, ctx: AppContext = Depends(context)
) -> ProfileOut:
    """Keep the profile `name` (replacing one of that name)."""
    ctx.connections_of(current_user(request)).get(body.connection)  # 404 for none
    fields = body.model_dump()
    stops = fields.pop("stop_strings")
    profile = Profile(name=name, stop_strings=None if stops is None else tuple(stops), **fields)
    return _out(_profiles(request, ctx).put(profile))


@router.delete("/api/connection-profiles/{name:path}", status_code=204)
def delete_profile(name: str, request: Request, ctx: AppContext = Depends(context)) -> Response:
    _profiles(request, ctx).delete(name)
    return Response(status_code=204)


@router.post("/api/chats/{chat_id}/profile", response_model=SwitchOut)
def switch_chat_profile(
    chat_id: str, body: SwitchIn, request: Request, ctx: AppContext = Depends(context)
) -> SwitchOut:
    """Switch the chat to a profile: its connection and model from the next turn on, and
    its preset, templates, tokenizer and stop strings in use."""
    done = switch_profile(
        ctx.chats,
        ctx.connections_of(current_user(request)),
        chat_id,
        body.profile,
        revision=body.revision,
    )
    return SwitchOut(
        chat=usecases.unchanged_view(ctx, chat_id), applied=done.applied, missing=done.missing
    )
