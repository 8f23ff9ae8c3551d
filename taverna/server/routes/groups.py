"""Groups: make and change them, start their chats, export them; a chat's rounds."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, Field

from taverna.server import library_views, usecases
from taverna.server.context import AppContext, backed_up, context, current_user
from taverna.server.openapi import file_responses
from taverna.server.routes.generation import generation, remember, round_out, task_out
from taverna.server.schemas import (
    NAME_MAX,
    REVISION_MAX,
    TEXT_MAX,
    ChatOut,
    ChatRevision,
    ChatSummaryOut,
    RoundOut,
    Strict,
    TaskOut,
)
from taverna.services.chats.groups import GroupService
from taverna.services.turns import GenerationService

router = APIRouter(tags=["groups"], dependencies=[Depends(backed_up)])

STRATEGIES = ("natural", "list", "manual", "pooled")
MODES = ("swap", "join", "join_with_muted")


class GroupMemberOut(BaseModel):
    """One member of a group: its card file name in the group, its character, muted or not."""

    file: str
    name: str
    character_id: str | None
    avatar_url: str | None
    muted: bool
    talkativeness: float
    connection: str | None = Field(default=None, description="the member's own connection")
    preset: str | None = Field(
        default=None, description="the member's own Chat Completion preset (an id)"
    )


class GroupOut(BaseModel):
    """A group: its members in order and how they take turns (SillyTavern's settings)."""

    id: str
    name: str
    revision: int
    members: list[GroupMemberOut]
    activation_strategy: Literal["natural", "list", "manual", "pooled"]
    generation_mode: Literal["swap", "join", "join_with_muted"]
    allow_self_responses: bool
    auto_mode_delay: float
    join_prefix: str
    join_suffix: str


class NewGroupIn(Strict):
    name: str = Field(min_length=1, max_length=NAME_MAX)
    character_ids: list[Annotated[str, Field(min_length=1, max_length=100)]] = Field(
        min_length=1, max_length=100, description="the members' characters, in speaking order"
    )
    activation_strategy: Literal["natural", "list", "manual", "pooled"] = "natural"
    generation_mode: Literal["swap", "join", "join_with_muted"] = "swap"
    allow_self_responses: bool = False


class GroupChangesIn(Strict):
    """What to change in a group; what is left out stays as it is."""

    name: str | None = Field(default=None, min_length=1, max_length=NAME_MAX)
    character_ids: list[Annotated[str, Field(min_length=1, max_length=100)]] | None = Field(
        default=None, min_length=1, max_length=100, description="the members, reordered"
    )
    muted: list[Annotated[str, Field(max_length=NAME_MAX)]] | None = Field(
        default=None, max_length=100, description="the names of the muted members"
    )
    activation_strategy: Literal["natural", "list", "manual", "pooled"] | None = None
    generation_mode: Literal["swap", "join", "join_with_muted"] | None = None
    allow_self_responses: bool | None = None
    auto_mode_delay: float | None = Field(default=None, ge=1, le=3600)
    join_prefix: str | None = Field(default=None, max_length=TEXT_MAX)
    join_suffix: str | None = Field(default=None, max_length=TEXT_MAX)
    connections: (
        dict[
            Annotated[str, Field(max_length=NAME_MAX)],
            Annotated[str, Field(max_length=NAME_MAX)] | None,
        ]
        | None
    ) = Field(
        default=None,
        max_length=100,
        description="a member's own connection by its name (null: the chat's connection)",
    )
    presets: (
        dict[
            Annotated[str, Field(max_length=NAME_MAX)],
            Annotated[str, Field(max_length=100)] | None,
        ]
        | None
    ) = Field(
        default=None,
        max_length=100,
        description="a member's own Chat Completion preset (an id) by its name (null: the chat's)",
    )
    revision: int = Field(ge=1, le=REVISION_MAX, description="the group's revision as read")


class NewGroupChatIn(Strict):
    title: str | None = Field(default=None, max_length=NAME_MAX)


class RoundIn(Strict):
    text: str | None = Field(default=None, max_length=TEXT_MAX)
    member: str | None = Field(
        default=None,
        max_length=NAME_MAX,
        description="the member who answers (else the group's turn order)",
    )
    auto: bool = Field(
        default=False,
        description="a round nobody typed for (auto mode): the person is not answered",
    )
    revision: ChatRevision


class RoundStarted(BaseModel):
    chat: ChatOut
    round: RoundOut
    task: TaskOut | None


def groups(request: Request, ctx: AppContext = Depends(context)) -> GroupService:
    """A route dependency: the groups of the account making the request."""
    return GroupService(ctx.chats, owner=current_user(request))


def group_out(service: GroupService, group_id: str) -> GroupOut:
    doc = service.document(group_id)
    group = service.get(group_id)
    strategy = group.activation_strategy
    return GroupOut(
        id=doc.id,
        name=group.name or doc.name,
        revision=doc.revision,
        members=[
            GroupMemberOut(
                file=m.file,
                name=m.name,
                character_id=m.character_id,
                avatar_url=f"/api/characters/{m.character_id}/avatar" if m.character_id else None,
                muted=m.muted,
                talkativeness=m.talkativeness,
                connection=m.connection,
                preset=m.preset,
            )
            for m in service.members(group)
        ],
        activation_strategy=STRATEGIES[strategy] if 0 <= strategy < 4 else "natural",
        generation_mode=MODES[int(group.mode)],
        allow_self_responses=group.allow_self_responses,
        auto_mode_delay=float(group.auto_mode_delay),
        join_prefix=group.generation_mode_join_prefix,
        join_suffix=group.generation_mode_join_suffix,
    )


@router.get("/api/groups", response_model=list[GroupOut])
def list_groups(service: GroupService = Depends(groups)) -> list[GroupOut]:
    return [group_out(service, doc.id) for doc in service.all()]


@router.post("/api/groups", response_model=GroupOut, status_code=201)
def create_group(body: NewGroupIn, service: GroupService = Depends(groups)) -> GroupOut:
    """A new group of stored characters, in speaking order."""
    doc = service.create(
        body.name,
        body.character_ids,
        settings={
            "activation_strategy": STRATEGIES.index(body.activation_strategy),
            "generation_mode": MODES.index(body.generation_mode),
            "allow_self_responses": body.allow_self_responses,
        },
    )
    return group_out(service, doc.id)


@router.get("/api/groups/{group_id}", response_model=GroupOut)
def get_group(group_id: str, service: GroupService = Depends(groups)) -> GroupOut:
    return group_out(service, group_id)


@router.patch("/api/groups/{group_id}", response_model=GroupOut)
def change_group(
    group_id: str,
    body: GroupChangesIn,
    request: Request,
    ctx: AppContext = Depends(context),
    service: GroupService = Depends(groups),
) -> GroupOut:
    """Change a group: members and their order, who is muted, the turn order, the mode."""
    changes: dict[str, Any] = {}
    if body.name is not None:
        changes["name"] = body.name
    if body.character_ids is not None:
        changes["members"] = service.member_files(body.character_ids)
    if body.muted is not None:
        changes["disabled_members"] = service.files_of(group_id, body.muted, changes.get("members"))
    if body.activation_strategy is not None:
        changes["activation_strategy"] = STRATEGIES.index(body.activation_strategy)
    if body.generation_mode is not None:
        changes["generation_mode"] = MODES.index(body.generation_mode)
    if body.allow_self_responses is not None:
        changes["allow_self_responses"] = body.allow_self_responses
    if body.auto_mode_delay is not None:
        changes["auto_mode_delay"] = body.auto_mode_delay
    if body.join_prefix is not None:
        changes["generation_mode_join_prefix"] = body.join_prefix
    if body.join_suffix is not None:
        changes["generation_mode_join_suffix"] = body.join_suffix
    if body.connections is not None:
        for connection in body.connections.values():
            if connection:
                # a connection the account does not have: 404
                ctx.connections_of(current_user(request)).get(connection)
        changes["taverna"] = service.own_settings(group_id, "connection", body.connections)
    if body.presets is not None:
        for preset in body.presets.values():
            if preset:
                service.preset(preset)  # a preset that does not exist: 404
        changes["taverna"] = service.own_settings(
            group_id, "preset", body.presets, changes.get("taverna")
        )
    service.update(group_id, changes, revision=body.revision)
    return group_out(service, group_id)


@router.delete("/api/groups/{group_id}", status_code=204)
def delete_group(group_id: str, service: GroupService = Depends(groups)) -> Response:
    """Remove a group; its chats stay, with the members they had."""
    service.delete(group_id)
    return Response(status_code=204)


@router.get(
    "/api/groups/{group_id}/export",
    response_class=Response,
    responses=file_responses("application/json"),
)
def export_group(group_id: str, service: GroupService = Depends(groups)) -> Response:
    """The group as SillyTavern's `groups/*.json`."""
    doc = service.document(group_id)
    return Response(
        service.export(group_id),
        media_type="application/json",
        headers=library_views.attachment(f"{library_views.download_name(doc.name)}.json"),
    )


@router.post("/api/groups/{group_id}/chats", response_model=ChatSummaryOut, status_code=201)
def start_group_chat(
    group_id: str,
    body: NewGroupChatIn,
    request: Request,
    ctx: AppContext = Depends(context),
    service: GroupService = Depends(groups),
) -> ChatSummaryOut:
    """A new chat of the group, opened by each unmuted member's greeting."""
    owner = current_user(request)
    chat = service.start_chat(group_id, title=body.title)
    ctx.chat_written(chat.id)
    return usecases.summary(ctx, chat.id, owner=owner)


@router.post("/api/chats/{chat_id}/round", response_model=RoundStarted, status_code=202)
async def start_round(
    chat_id: str,
    body: RoundIn,
    ctx: AppContext = Depends(context),
    service: GenerationService = Depends(generation),
) -> RoundStarted:
    """Post the person's message (if any) and have the group answer: the members the
    group's turn order picks (or `member`), one after another, each seeing the replies
    before its own. Stopping the running task ends the round."""
    below = await asyncio.to_thread(lambda: ctx.chats.get_chat(chat_id).active_leaf_id)
    found = await service.round(
        chat_id,
        body.text or "",
        revision=body.revision,
        member=body.member,
        user_input=not body.auto,
        started=lambda run: remember(ctx, run),  # each speaker's reply is kept and backed up
    )
    await asyncio.sleep(0)
    view = await asyncio.to_thread(usecases.changed_view, ctx, chat_id, below=below)
    first = found.runs[0] if found.runs else None
    return RoundStarted(chat=view, round=round_out(found), task=task_out(first) if first else None)


@router.get("/api/rounds/{round_id}", response_model=RoundOut)
def get_round(round_id: str, service: GenerationService = Depends(generation)) -> RoundOut:
    return round_out(service.round_state(round_id))


@router.post("/api/rounds/{round_id}/stop", response_model=RoundOut)
async def stop_round(round_id: str, service: GenerationService = Depends(generation)) -> RoundOut:
    """End a round: the running generation stops (what streamed is kept as a draft)."""
    await service.stop_round(round_id)
    return round_out(service.round_state(round_id))
