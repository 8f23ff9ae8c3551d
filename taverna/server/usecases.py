"""What the page's chat views are made of: a chat with its persona and running task, a
chat's summary line, the inspector's prompt. Each shapes what services return."""

from __future__ import annotations

from taverna.model.chat import Chat, PathWindow
from taverna.server.context import AppContext
from taverna.server.schemas import ChatOut, ChatSummaryOut, PersonaRef, PromptOut, TaskOut
from taverna.server.views import chat_out, chat_summary_out
from taverna.services.chats import reads as chat_reads
from taverna.services.library import editing as library_editing
from taverna.services.scripts.message_regex import shown_in_window
from taverna.services.turns import RunningGeneration
from taverna.services.turns.inspector import inspect_prompt as inspect


def running_task(ctx: AppContext, chat_id: str) -> TaskOut | None:
    """The generation running for a chat, if any, so a reloaded page can follow it."""
    service = ctx.services.get("generation")
    if service is None:
        return None
    running = service.registry.for_chat(chat_id, running_only=True)
    if not running:
        return None
    run = running[-1]
    return TaskOut(id=run.id, kind=run.kind.value, chat_id=chat_id, status=task_status(run))


def task_status(run: RunningGeneration) -> str:
    """`queued` while it waits for its prompt to be built, then `running`, then `done`."""
    if run.done:
        return "done"
    return "queued" if run.queued is not None else "running"


def persona_of(ctx: AppContext, chat: Chat) -> PersonaRef:
    """Who the user is in a chat: the persona of the chat's user name, else the default one."""
    if ctx.turns is not None:  # kept parsed between turns: no persona read again
        chosen = library_editing.chosen_persona(ctx.turns.personas(chat.owner), chat.user_name)
    else:
        chosen = library_editing.chat_persona(ctx.library(chat.owner), chat.user_name)
    if chosen is None:
        return PersonaRef(name=chat.user_name or "User")
    doc_id, persona = chosen
    return PersonaRef(
        id=doc_id,
        name=chat.user_name or persona.name or "User",
        avatar_url=f"/api/personas/{doc_id}/avatar",
    )


# A window of the path: enough to fill a tall screen twice; a page asks for more by cursor.
WINDOW = 50
WINDOW_MAX = 500


def chat_view(
    ctx: AppContext,
    chat_id: str,
    *,
    limit: int = WINDOW,
    before: str | None = None,
    after: str | None = None,
    at: int | None = None,
) -> ChatOut:
    """The chat with one window of its path: the last messages, a page by cursor, or the
    page from a position."""
    with ctx.chats.reading():
        window = ctx.chats.window(chat_id, limit=limit, before=before, after=after, at=at)
        return _chat_out(ctx, window, changed=False)


def changed_view(ctx: AppContext, chat_id: str, *, below: str | None) -> ChatOut:
    """The chat after a write that may have changed its path below message `below`
    (None: from its first message): those messages to the end, or the last window when
    more than a window follows."""
    with ctx.chats.reading():
        window, reaches = ctx.chats.window_from(chat_id, below, limit=WINDOW)
        return _chat_out(ctx, window, changed=reaches)


def unchanged_view(ctx: AppContext, chat_id: str) -> ChatOut:
    """The chat after a write that left every message as it was (a rename, a checkpoint)."""
    return changed_view(ctx, chat_id, below=ctx.chats.get_chat(chat_id).active_leaf_id)


def _chat_out(ctx: AppContext, window: PathWindow, *, changed: bool) -> ChatOut:
    shown = shown_in_window(ctx.chats, window)
    return chat_out(
        window,
        ctx.chats.list_branches(window.chat.id, revision=window.chat.revision),
        persona=persona_of(ctx, window.chat),
        task=running_task(ctx, window.chat.id),
        changed=changed,
        shown=shown.content,
        shown_reasoning=shown.reasoning,
    )


def summary(ctx: AppContext, chat_id: str, *, owner: str) -> ChatSummaryOut:
    """A chat's line in the list of chats."""
    return chat_summary_out(chat_reads.listing(ctx.chats, chat_id, owner=owner))


def inspect_prompt(ctx: AppContext, chat_id: str, node_id: str | None) -> PromptOut:
    """The inspector's prompt for the next reply, or for the reply `node_id`."""
    view = inspect(ctx.generation, chat_id, node_id)
    return PromptOut(
        prompt=view.prompt,
        request=view.request,
        first_message_in_context=view.first_message_in_context,
        included_message_ids=view.included_message_ids,
        as_sent=view.as_sent,
        usage=view.usage,
        reuse=view.reuse,
    )
