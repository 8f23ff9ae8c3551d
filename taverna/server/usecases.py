"""Small use cases the page needs that no service offers yet; each calls services only.

Kept apart and named for what they do, so each can move into the service that owns
its concept without touching the routes.
"""

from __future__ import annotations

import httpx

from taverna.errors import NotFound, ProviderError
from taverna.model.chat import Chat
from taverna.server.context import AppContext
from taverna.server.schemas import ChatOut, ChatSummaryOut, PersonaRef, TaskOut
from taverna.server.views import chat_out, chat_summary_out
from taverna.services.connections import Connection, ConnectionService


def running_task(ctx: AppContext, chat_id: str) -> TaskOut | None:
    """The generation running for a chat, if any, so a reloaded page can follow it."""
    tasks = ctx.services.get("tasks")
    if tasks is None:
        return None
    task = tasks.running_for_chat(chat_id)
    return TaskOut(id=task.id, kind=task.kind, chat_id=chat_id) if task else None


def persona_of(ctx: AppContext, chat: Chat) -> PersonaRef:
    """Who the user is in a chat: the chat's user name, else the default persona's."""
    name = chat.user_name or "User"
    return PersonaRef(name=name)


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


def rename_chat(ctx: AppContext, chat_id: str, title: str, *, revision: int) -> Chat:
    """Give a chat a new title (one revision, undoable)."""
    title = title.strip()
    with ctx.store.write(chat_id, revision=revision, label="rename") as w:
        w.update_chat(title=title)
    return ctx.store.get_chat(chat_id)


async def list_models(connections: ConnectionService, connection: Connection) -> list[str]:
    """The model names an API offers (`GET {url}/models`, the OpenAI-style listing).

    APIs without such a listing answer with the connection's own model.
    """
    if (
        connection.api.value not in ("openai", "openai-compatible", "openai-text")
        or not connection.url
    ):
        return [connection.model] if connection.model else []
    key = connections.resolve_key(connection)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    url = connection.url.rstrip("/") + "/models"
    try:
        async with httpx.AsyncClient(timeout=httpx.Timeout(15, connect=5)) as client:
            response = await client.get(url, headers=headers)
    except httpx.HTTPError as exc:
        raise ProviderError(f"could not reach {connection.url}: {type(exc).__name__}") from None
    if response.status_code != 200:
        raise ProviderError(f"the API answered {response.status_code} to the model listing")
    try:
        data = response.json().get("data", [])
        return sorted({str(item["id"]) for item in data if isinstance(item, dict) and "id" in item})
    except (ValueError, AttributeError):
        raise ProviderError("the model listing was not the expected JSON") from None
