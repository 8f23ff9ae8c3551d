"""Quick Reply sets: list, create and edit, delete, and where they are active."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Depends, File, Request, Response, UploadFile
from pydantic import BaseModel, Field, field_validator

from taverna.model.quick_reply import QuickReply, QuickReplySet, QuickReplyTool
from taverna.server import library_views
from taverna.server.context import AppContext, backed_up, context, current_user
from taverna.server.openapi import file_responses
from taverna.server.schemas import NAME_MAX, TEXT_MAX, ChatRevision, Strict
from taverna.server.uploads import read_limited
from taverna.services.chats import reads as chat_reads
from taverna.services.plugins import EventName
from taverna.services.scripts.quick_replies import QuickReplyButton, QuickReplyService, StoredSet

router = APIRouter(tags=["quick replies"])
# File uploads: mounted with the upload body limit (see `create_app`).
uploads = APIRouter(tags=["quick replies"])

TRIGGER_FIELDS = {
    "startup": "execute_on_startup",
    "user": "execute_on_user",
    "ai": "execute_on_ai",
    "chat_change": "execute_on_chat_change",
    "group_member_draft": "execute_on_group_member_draft",
    "new_chat": "execute_on_new_chat",
}


class QuickReplyToolIn(Strict):
    """A function tool the reply defines: its script answers the model's calls."""

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str = Field(default="", max_length=TEXT_MAX)
    parameters: dict[str, Any] = Field(default_factory=dict)

    @field_validator("parameters")
    @classmethod
    def _schema(cls, parameters: dict[str, Any]) -> dict[str, Any]:
        if parameters and parameters.get("type", "object") != "object":
            raise ValueError('a tool\'s parameters are a JSON schema of "type": "object"')
        if "properties" in parameters and not isinstance(parameters["properties"], dict):
            raise ValueError("the schema's properties must be an object")
        return parameters


class QuickReplyToolOut(BaseModel):
    name: str
    description: str
    parameters: dict[str, Any]


class QuickReplyIn(Strict):
    label: str = Field(max_length=NAME_MAX)
    message: str = Field(default="", max_length=TEXT_MAX)
    title: str = Field(default="", max_length=NAME_MAX)
    hidden: bool = False
    triggers: list[str] = Field(default_factory=list, max_length=len(TRIGGER_FIELDS))
    automation_id: str = Field(default="", max_length=NAME_MAX)
    # taverna's own: the events the reply runs on by itself, and the tool it defines
    events: list[str] = Field(default_factory=list, max_length=len(EventName))
    tool: QuickReplyToolIn | None = None

    @field_validator("events")
    @classmethod
    def _known_events(cls, events: list[str]) -> list[str]:
        known = {e.value for e in EventName} - {EventName.CHAT_COMPLETION_PROMPT_READY.value}
        for name in events:
            if name not in known:
                raise ValueError(f"unknown event {name!r} (known: {', '.join(sorted(known))})")
        return list(dict.fromkeys(events))


class QuickReplySetIn(Strict):
    """A set as the page edits it; its other SillyTavern fields are kept as stored."""

    name: str = Field(min_length=1, max_length=NAME_MAX)
    replies: list[QuickReplyIn] = Field(default_factory=list, max_length=1000)
    active: bool | None = None
    # Whether its buttons show where it is active in every chat (hidden: its replies
    # still run on their triggers and by name).
    visible: bool | None = None


class QuickReplyOut(BaseModel):
    set: str
    id: int
    label: str
    title: str
    message: str
    hidden: bool
    triggers: list[str]
    automation_id: str = ""
    events: list[str] = Field(default_factory=list)
    tool: QuickReplyToolOut | None = None


class QuickReplySetOut(BaseModel):
    id: str
    name: str
    active: bool
    visible: bool
    replies: list[QuickReplyOut]


class ActiveSetsIn(Strict):
    sets: list[str] = Field(max_length=1000)


class ChatActiveSetsIn(Strict):
    sets: list[str] = Field(max_length=1000)
    # Some sets' buttons shown or hidden in this chat; the others keep theirs.
    visible: dict[str, bool] = Field(default_factory=dict, max_length=1000)
    revision: ChatRevision


class ChatQuickRepliesOut(BaseModel):
    """What a chat offers: its replies in order (global sets first) and its own sets."""

    replies: list[QuickReplyOut]
    chat_sets: list[str]
    # Whether each of the chat's own sets shows its buttons.
    chat_visible: dict[str, bool]
    revision: int


def _reply_out(button: QuickReplyButton) -> QuickReplyOut:
    return QuickReplyOut(
        set=button.set,
        id=button.id,
        label=button.label,
        title=button.title,
        message=button.message,
        hidden=button.hidden,
        triggers=list(button.triggers),
        automation_id=button.automation_id,
    )


def _set_out(stored: StoredSet, active: Mapping[str, bool]) -> QuickReplySetOut:
    """A set, with whether it is active in every chat (`active`: the global sets, each
    with whether its buttons show) and shown there."""
    qr_set = stored.set
    return QuickReplySetOut(
        id=stored.id,
        name=qr_set.name,
        active=qr_set.name in active,
        visible=active.get(qr_set.name, True),
        replies=[
            QuickReplyOut(
                set=qr_set.name,
                id=int(r.id),
                label=r.label,
                title=r.title,
                message=r.message,
                hidden=r.is_hidden,
                triggers=[k for k, f in TRIGGER_FIELDS.items() if getattr(r, f)],
                automation_id=r.automation_id,
                events=list(r.execute_on_events or ()),
                tool=_tool_out(r.tool),
            )
            for r in qr_set.qr_list
        ],
    )


def _tool_out(tool: QuickReplyTool | None) -> QuickReplyToolOut | None:
    if tool is None:
        return None
    return QuickReplyToolOut(
        name=tool.name, description=tool.description, parameters=dict(tool.parameters)
    )


def _service(request: Request, ctx: AppContext) -> QuickReplyService:
    return QuickReplyService(ctx.chats, owner=current_user(request))


@router.get("/api/quick-replies", response_model=list[QuickReplySetOut])
def list_sets(request: Request, ctx: AppContext = Depends(context)) -> list[QuickReplySetOut]:
    """Every Quick Reply set, with whether it is active in every chat."""
    service = _service(request, ctx)
    active = service.global_links()
    return [_set_out(s, active) for s in service.sets()]


@router.put("/api/quick-replies", response_model=QuickReplySetOut)
def save_set(
    body: QuickReplySetIn, request: Request, ctx: AppContext = Depends(context)
) -> QuickReplySetOut:
    """Create or replace the set of this name: its replies in order (ids kept by position
    where the set had replies, new ones numbered after the highest)."""
    service = _service(request, ctx)
    stored = service.by_name(body.name)
    old = list(stored.set.qr_list) if stored else []
    next_id = max([int(r.id) for r in old] + [int(stored.set.id_index) if stored else 0]) + 1
    replies = []
    for index, given in enumerate(body.replies):
        if index < len(old):
            base = old[index]
        else:
            base = QuickReply(id=next_id)
            next_id += 1
        triggers = {field: name in given.triggers for name, field in TRIGGER_FIELDS.items()}
        replies.append(
            base.model_copy(
                update={
                    "label": given.label,
                    "message": given.message,
                    "title": given.title,
                    "is_hidden": given.hidden,
                    "automation_id": given.automation_id,
                    **(
                        {"execute_on_events": given.events or None}
                        if given.events or base.execute_on_events
                        else {}
                    ),
                    "tool": (
                        QuickReplyTool(**given.tool.model_dump())
                        if given.tool is not None
                        else None
                    ),
                    **triggers,
                }
            )
        )
    base_set = stored.set if stored else None
    qr_set = (base_set or QuickReplySet(name=body.name)).model_copy(
        update={
            "name": body.name,
            "qr_list": replies,
            "id_index": max([int(r.id) for r in replies] + [0]),
        }
    )
    saved = service.save(qr_set)
    active = service.global_links()
    names = list(active)
    if body.active is not None and (body.name in active) != body.active:
        names = [n for n in names if n != body.name] + ([body.name] if body.active else [])
    shown = {body.name: body.visible} if body.visible is not None else {}
    if names != list(active) or (body.name in names and shown):
        service.set_global(names, shown)
        active = service.global_links()
    return _set_out(saved, active)


@uploads.post("/api/quick-replies/import", response_model=QuickReplySetOut, status_code=201)
async def import_set(
    request: Request, file: UploadFile = File(...), ctx: AppContext = Depends(context)
) -> QuickReplySetOut:
    """Store a SillyTavern Quick Reply set file (`QuickReplies/<name>.json`, version 2 or 1)."""
    data = await read_limited(file, ctx.upload_limit)
    service = _service(request, ctx)
    stored = await ctx.off_loop(service.import_file, data, file.filename or "Quick Replies.json")
    return _set_out(stored, service.global_links())


@router.get(
    "/api/quick-replies/{set_id}/export",
    response_class=Response,
    responses=file_responses("application/json"),
)
def export_set(set_id: str, request: Request, ctx: AppContext = Depends(context)) -> Response:
    """The set as SillyTavern's file."""
    name, data = _service(request, ctx).export(set_id)
    return Response(
        data,
        media_type="application/json",
        headers=library_views.attachment(f"{library_views.download_name(name)}.json"),
    )


@router.delete("/api/quick-replies/{set_id}", status_code=204)
def delete_set(set_id: str, request: Request, ctx: AppContext = Depends(context)) -> Response:
    """Delete a set (it leaves the global list too)."""
    _service(request, ctx).delete(set_id)
    return Response(status_code=204)


@router.put("/api/quick-replies-active", response_model=list[str])
def set_active_sets(
    body: ActiveSetsIn, request: Request, ctx: AppContext = Depends(context)
) -> list[str]:
    """The sets active in every chat, in order."""
    service = _service(request, ctx)
    service.set_global(body.sets)
    return service.global_sets()


@router.get("/api/chats/{chat_id}/quick-replies", response_model=ChatQuickRepliesOut)
def chat_replies(
    chat_id: str, request: Request, ctx: AppContext = Depends(context)
) -> ChatQuickRepliesOut:
    """The Quick Replies a chat offers (global sets first, then its own)."""
    service = _service(request, ctx)
    chat = ctx.chats.get_chat(chat_id)
    return ChatQuickRepliesOut(
        replies=[_reply_out(b) for b in service.replies(chat_id)],
        chat_sets=service.chat_sets(chat),
        chat_visible=service.chat_links(chat),
        revision=chat.revision,
    )


@router.put(
    "/api/chats/{chat_id}/quick-replies",
    response_model=ChatQuickRepliesOut,
    dependencies=[Depends(backed_up)],
)
def set_chat_sets(
    chat_id: str, body: ChatActiveSetsIn, request: Request, ctx: AppContext = Depends(context)
) -> ChatQuickRepliesOut:
    """The sets active in this chat besides the global ones."""
    _service(request, ctx).set_chat(
        chat_id, body.sets, revision=body.revision, visible=body.visible
    )
    return chat_replies(chat_id, request, ctx)


@router.get("/api/chats/{chat_id}/messages/{node_id}/automations", response_model=list[str])
def reply_automations(
    chat_id: str, node_id: str, request: Request, ctx: AppContext = Depends(context)
) -> list[str]:
    """The automation ids of the lorebook entries in reply `node_id`'s prompt: the Quick
    Replies with the same automation id run after it."""
    chat_reads.parent_of(ctx.chats, chat_id, node_id)  # 404 for a message of another chat
    pending = ctx.generation.last_prompts.get(chat_id)
    return _service(request, ctx).activated_automations(chat_id, node_id, pending=pending)
