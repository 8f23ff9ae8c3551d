"""What the page's chat views are made of: a chat with its persona and running task, a
chat's summary line, the inspector's prompt. Each shapes what services return."""

from __future__ import annotations

from taverna.errors import NotFound
from taverna.model.chat import Chat
from taverna.model.persona import Persona
from taverna.server.context import AppContext
from taverna.server.schemas import ChatOut, ChatSummaryOut, PersonaRef, PromptOut, TaskOut
from taverna.server.views import chat_out, chat_summary_out
from taverna.services.inspector import inspect_prompt as inspect
from taverna.services.library import LibraryKind


def running_task(ctx: AppContext, chat_id: str) -> TaskOut | None:
    """The generation running for a chat, if any, so a reloaded page can follow it."""
    service = ctx.services.get("generation")
    if service is None:
        return None
    running = service.registry.for_chat(chat_id, running_only=True)
    if not running:
        return None
    run = running[-1]
    return TaskOut(id=run.id, kind=run.kind.value, chat_id=chat_id)


def persona_of(ctx: AppContext, chat: Chat) -> PersonaRef:
    """Who the user is in a chat: the persona of the chat's user name, else the default one."""
    docs = ctx.store.find_documents(LibraryKind.PERSONA.value, owner=chat.owner)
    personas = [(d.id, Persona.model_validate(dict(d.data))) for d in docs]
    chosen = next(
        ((i, p) for i, p in personas if chat.user_name and p.name == chat.user_name), None
    )
    chosen = chosen or next(((i, p) for i, p in personas if p.is_default), None)
    if chosen is None:
        return PersonaRef(name=chat.user_name or "User")
    doc_id, persona = chosen
    return PersonaRef(
        id=doc_id,
        name=chat.user_name or persona.name or "User",
        avatar_url=f"/api/personas/{doc_id}/avatar",
    )


def chat_view(ctx: AppContext, chat_id: str) -> ChatOut:
    path = ctx.chats.active_path(chat_id)
    return chat_out(
        path,
        ctx.chats.list_branches(chat_id),
        persona=persona_of(ctx, path.chat),
        task=running_task(ctx, chat_id),
    )


def summary(ctx: AppContext, chat_id: str, *, owner: str) -> ChatSummaryOut:
    for listing in ctx.store.list_chats(owner=owner):
        if listing.chat.id == chat_id:
            return chat_summary_out(listing)
    raise NotFound("no such chat", field="chat_id")


def inspect_prompt(ctx: AppContext, chat_id: str, node_id: str | None) -> PromptOut:
    """The inspector's prompt for the next reply, or for the reply `node_id`."""
    view = inspect(ctx.generation, chat_id, node_id)
    return PromptOut(
        prompt=view.prompt,
        request=view.request,
        first_message_in_context=view.first_message_in_context,
        included_message_ids=view.included_message_ids,
        as_sent=view.as_sent,
    )
