"""Chats and their messages: read the active path, edit, hide, delete, swipe, branch, undo."""

from __future__ import annotations

from collections.abc import Callable

import anyio
from fastapi import APIRouter, Depends, File, Form, Query, Request, Response, UploadFile

from taverna.errors import NotFound, TavernaError
from taverna.model.chat import AuthorsNote
from taverna.server import library_views, usecases
from taverna.server.context import AppContext, backed_up, context, current_user, library
from taverna.server.openapi import file_responses
from taverna.server.routes.chats_schemas import (
    AuthorsNoteIn,
    BranchIn,
    ChatConnectionIn,
    ChatImported,
    ChatLorebookIn,
    ChatPersonaIn,
    ChatSettingsOut,
    ChatVariablesIn,
    CheckpointIn,
    CheckpointOut,
    ContextOut,
    EditIn,
    HiddenIn,
    HideRangeIn,
    MessageImageIn,
    NewChatIn,
    RenameChatIn,
    ScriptIn,
    ScriptNoticeOut,
    ScriptOut,
    SelectIn,
    VariablesOut,
)
from taverna.server.schemas import (
    BranchOut,
    ChatOut,
    ChatSummaryOut,
    ImportWarningOut,
    QueryRevision,
    RevisionIn,
)
from taverna.server.uploads import read_limited
from taverna.server.views import branch_out, chat_summary_out
from taverna.services.chats import editing
from taverna.services.chats import reads as chat_reads
from taverna.services.chats import views as chat_views
from taverna.services.interchange.library_import import LibraryImport
from taverna.services.library.service import LibraryService
from taverna.services.scripts import Generation
from taverna.services.scripts.runner import ScriptService
from taverna.services.turns import chat_connection, inspector
from taverna.services.turns.quiet import quiet_text

router = APIRouter(prefix="/api/chats", tags=["chats"], dependencies=[Depends(backed_up)])
# File uploads: mounted with the upload body limit (see `create_app`).
uploads = APIRouter(prefix="/api/chats", tags=["chats"], dependencies=[Depends(backed_up)])


@uploads.post("/import", response_model=ChatImported, status_code=201)
async def import_chat(
    file: UploadFile = File(...),
    character_id: str | None = Form(default=None),
    lib: LibraryService = Depends(library),
    ctx: AppContext = Depends(context),
) -> ChatImported:
    """Import one SillyTavern chat file (.jsonl) as a chat with `character_id`, or with the
    character the file names. When the library has no character of that name the answer
    is 400 with code `chat_needs_character` and the name in `params`; nothing is stored.
    The same file imported again gives back the chat it made (`already_imported`)."""
    data = await read_limited(file, ctx.upload_limit)
    name = file.filename or "chat.jsonl"
    done = await ctx.off_loop(
        LibraryImport(lib).import_chat, data, name, character_id=character_id or None
    )
    return ChatImported(
        id=done.chat.id,
        title=done.chat.title,
        messages=done.messages,
        already_imported=done.already_imported,
        warnings=ImportWarningOut.of(done.warnings),
    )


def _node_of(ctx: AppContext, chat_id: str, node_id: str) -> str | None:
    """404 unless `node_id` is a message of `chat_id`; its parent (None: a first message)."""
    return chat_reads.parent_of(ctx.chats, chat_id, node_id)


def _moved(ctx: AppContext, chat_id: str, old_leaf: str | None) -> ChatOut:
    """The chat after its active leaf moved: the path changed below where the old and the
    new path meet (from its start when they meet more than a window up)."""
    leaf = ctx.chats.get_chat(chat_id).active_leaf_id
    meeting = ctx.chats.meeting_point(chat_id, old_leaf, leaf, within=usecases.WINDOW)
    return usecases.changed_view(ctx, chat_id, below=meeting)


@router.get("", response_model=list[ChatSummaryOut])
def list_chats(
    request: Request, character_id: str | None = None, ctx: AppContext = Depends(context)
) -> list[ChatSummaryOut]:
    listings = chat_reads.listings(ctx.chats, owner=current_user(request), character=character_id)
    return [chat_summary_out(item) for item in listings]


@router.post("", response_model=ChatSummaryOut, status_code=201)
def create_chat(
    body: NewChatIn, request: Request, ctx: AppContext = Depends(context)
) -> ChatSummaryOut:
    chat = editing.start_chat(
        ctx.chats, body.character_id, title=body.title, owner=current_user(request)
    )
    ctx.chat_written(chat.id)
    return usecases.summary(ctx, chat.id, owner=current_user(request))


@router.get("/{chat_id}", response_model=ChatOut)
def get_chat(
    chat_id: str,
    limit: int = Query(usecases.WINDOW, ge=1, le=usecases.WINDOW_MAX),
    before: str | None = Query(
        None, max_length=100, description="messages just older than this one"
    ),
    after: str | None = Query(
        None, max_length=100, description="messages just newer than this one"
    ),
    at: int | None = Query(
        None, ge=0, description="messages from this position of the path on (a scrollbar's)"
    ),
    ctx: AppContext = Depends(context),
) -> ChatOut:
    """The chat with a window of its active path: its last `limit` messages, the page
    just older than `before` or just newer than `after` (on the path the page read), or the
    page from position `at` (moved back to end at the path's end)."""
    if sum(x is not None for x in (before, after, at)) > 1:
        raise TavernaError(
            "ask for messages before one message, after one or from a position: one of them",
            field="after" if at is None else "at",
            code="page_before_or_after",
        )
    return usecases.chat_view(ctx, chat_id, limit=limit, before=before, after=after, at=at)


@router.patch("/{chat_id}", response_model=ChatOut)
def rename_chat(chat_id: str, body: RenameChatIn, ctx: AppContext = Depends(context)) -> ChatOut:
    editing.rename_chat(ctx.chats, chat_id, body.title, revision=body.revision)
    return usecases.unchanged_view(ctx, chat_id)


@router.put("/{chat_id}/persona", response_model=ChatOut)
def set_chat_persona(
    chat_id: str, body: ChatPersonaIn, ctx: AppContext = Depends(context)
) -> ChatOut:
    """Speak as another persona in this chat from the next turn on."""
    chat = ctx.chats.get_chat(chat_id)
    lib = ctx.library(chat.owner)
    editing.set_chat_persona(ctx.chats, lib, chat_id, body.persona_id, revision=body.revision)
    return usecases.unchanged_view(ctx, chat_id)


@router.put("/{chat_id}/connection", response_model=ChatOut)
def set_chat_connection(
    chat_id: str, body: ChatConnectionIn, request: Request, ctx: AppContext = Depends(context)
) -> ChatOut:
    """Talk to another connection (and model) in this chat from the next turn on; other
    chats and the default stay as they are. `connection` null: follow the default."""
    chat_connection.choose(
        ctx.chats,
        ctx.connections_of(current_user(request)),
        chat_id,
        body.connection,
        body.model,
        revision=body.revision,
    )
    return usecases.unchanged_view(ctx, chat_id)


@router.delete("/{chat_id}", status_code=204)
def delete_chat(
    chat_id: str, revision: QueryRevision, ctx: AppContext = Depends(context)
) -> Response:
    editing.delete_chat(ctx.chats, chat_id, revision=revision)
    return Response(status_code=204)


@router.patch("/{chat_id}/messages/{node_id}", response_model=ChatOut)
def edit_message(
    chat_id: str, node_id: str, body: EditIn, ctx: AppContext = Depends(context)
) -> ChatOut:
    parent = _node_of(ctx, chat_id, node_id)
    ctx.chats.edit(chat_id, node_id, body.content, revision=body.revision)
    return usecases.changed_view(ctx, chat_id, below=parent)


@router.delete("/{chat_id}/messages/{node_id}", response_model=ChatOut)
def delete_message(
    chat_id: str, node_id: str, revision: QueryRevision, ctx: AppContext = Depends(context)
) -> ChatOut:
    parent = _node_of(ctx, chat_id, node_id)
    ctx.chats.delete(chat_id, node_id, revision=revision)
    return usecases.changed_view(ctx, chat_id, below=parent)


@router.post("/{chat_id}/messages/{node_id}/restore", response_model=ChatOut)
def restore_message(
    chat_id: str, node_id: str, body: RevisionIn, ctx: AppContext = Depends(context)
) -> ChatOut:
    parent = _node_of(ctx, chat_id, node_id)
    ctx.chats.restore(chat_id, node_id, revision=body.revision)
    return usecases.changed_view(ctx, chat_id, below=parent)


@router.post("/{chat_id}/messages/{node_id}/hidden", response_model=ChatOut)
def set_hidden(
    chat_id: str, node_id: str, body: HiddenIn, ctx: AppContext = Depends(context)
) -> ChatOut:
    parent = _node_of(ctx, chat_id, node_id)
    ctx.chats.set_hidden(chat_id, [node_id], body.hidden, revision=body.revision)
    return usecases.changed_view(ctx, chat_id, below=parent)


@router.put("/{chat_id}/messages/{node_id}/image", response_model=ChatOut)
def set_message_image(
    chat_id: str, node_id: str, body: MessageImageIn, ctx: AppContext = Depends(context)
) -> ChatOut:
    """Attach a stored picture to a message, or take it off (undo brings it back)."""
    parent = _node_of(ctx, chat_id, node_id)
    ctx.chats.set_image(chat_id, node_id, body.image, revision=body.revision)
    return usecases.changed_view(ctx, chat_id, below=parent)


@router.post("/{chat_id}/messages/{node_id}/select", response_model=ChatOut)
def select_candidate(
    chat_id: str, node_id: str, body: SelectIn, ctx: AppContext = Depends(context)
) -> ChatOut:
    parent = _node_of(ctx, chat_id, node_id)
    candidates = ctx.chats.candidates(chat_id, node_id)
    if body.index > len(candidates):
        raise NotFound(
            f"there are {len(candidates)} candidates here",
            field="index",
            code="candidate_index_too_large",
            params={"n": str(len(candidates))},
        )
    target = candidates[body.index - 1].id
    ctx.chats.select_candidate(chat_id, target, revision=body.revision)
    return usecases.changed_view(ctx, chat_id, below=parent)


@router.get("/{chat_id}/branches", response_model=list[BranchOut])
def list_branches(chat_id: str, ctx: AppContext = Depends(context)) -> list[BranchOut]:
    ctx.chats.get_chat(chat_id)
    return [branch_out(b) for b in ctx.chats.list_branches(chat_id)]


@router.post("/{chat_id}/branches", response_model=ChatOut, status_code=201)
def branch_from(chat_id: str, body: BranchIn, ctx: AppContext = Depends(context)) -> ChatOut:
    _node_of(ctx, chat_id, body.node_id)
    ctx.chats.branch_from(chat_id, body.node_id, body.name, revision=body.revision)
    # The new branch's path is the path to its message: only what followed it goes.
    return usecases.changed_view(ctx, chat_id, below=body.node_id)


@router.post("/{chat_id}/branches/{branch_id}/switch", response_model=ChatOut)
def switch_branch(
    chat_id: str, branch_id: str, body: RevisionIn, ctx: AppContext = Depends(context)
) -> ChatOut:
    old_leaf = ctx.chats.get_chat(chat_id).active_leaf_id
    ctx.chats.switch_branch(chat_id, branch_id, revision=body.revision)
    return _moved(ctx, chat_id, old_leaf)


@router.get("/{chat_id}/checkpoints", response_model=list[CheckpointOut])
def list_checkpoints(chat_id: str, ctx: AppContext = Depends(context)) -> list[CheckpointOut]:
    """The chat's named checkpoints, oldest first."""
    ctx.chats.get_chat(chat_id)
    return [
        CheckpointOut(
            id=c.id,
            name=c.name,
            node_id=c.node_id,
            created=c.created.isoformat() if c.created else None,
        )
        for c in ctx.chats.list_checkpoints(chat_id)
    ]


@router.post("/{chat_id}/checkpoints", response_model=ChatOut, status_code=201)
def create_checkpoint(
    chat_id: str, body: CheckpointIn, ctx: AppContext = Depends(context)
) -> ChatOut:
    _node_of(ctx, chat_id, body.node_id)
    ctx.chats.create_checkpoint(chat_id, body.node_id, body.name, revision=body.revision)
    return usecases.unchanged_view(ctx, chat_id)


@router.post("/{chat_id}/checkpoints/{checkpoint_id}/open", response_model=ChatOut)
def open_checkpoint(
    chat_id: str,
    checkpoint_id: str,
    body: RevisionIn,
    ctx: AppContext = Depends(context),
) -> ChatOut:
    """Go back to a checkpoint: the active path ends at its message."""
    old_leaf = ctx.chats.get_chat(chat_id).active_leaf_id
    ctx.chats.open_checkpoint(chat_id, checkpoint_id, revision=body.revision)
    return _moved(ctx, chat_id, old_leaf)


@router.delete("/{chat_id}/checkpoints/{checkpoint_id}", response_model=ChatOut)
def delete_checkpoint(
    chat_id: str,
    checkpoint_id: str,
    revision: QueryRevision,
    ctx: AppContext = Depends(context),
) -> ChatOut:
    ctx.chats.delete_checkpoint(chat_id, checkpoint_id, revision=revision)
    return usecases.unchanged_view(ctx, chat_id)


@router.post("/{chat_id}/undo", response_model=ChatOut)
def undo(chat_id: str, body: RevisionIn, ctx: AppContext = Depends(context)) -> ChatOut:
    ctx.chats.undo(chat_id, revision=body.revision)
    # Any message may come back as it was: the answer reaches from the start.
    return usecases.changed_view(ctx, chat_id, below=None)


@router.post("/{chat_id}/redo", response_model=ChatOut)
def redo(chat_id: str, body: RevisionIn, ctx: AppContext = Depends(context)) -> ChatOut:
    ctx.chats.redo(chat_id, revision=body.revision)
    return usecases.changed_view(ctx, chat_id, below=None)


@router.put("/{chat_id}/lorebook", response_model=ChatOut)
def set_chat_lorebook(
    chat_id: str, body: ChatLorebookIn, request: Request, ctx: AppContext = Depends(context)
) -> ChatOut:
    """Bind a library lorebook to this chat (SillyTavern's chat lorebook), or unbind it."""
    editing.set_chat_lorebook(
        ctx.chats,
        chat_id,
        body.lorebook_id,
        owner=current_user(request),
        revision=body.revision,
    )
    return usecases.unchanged_view(ctx, chat_id)


@router.get(
    "/{chat_id}/export",
    response_class=Response,
    responses=file_responses("application/jsonl", "application/zip"),
)
def export_chat(chat_id: str, ctx: AppContext = Depends(context)) -> Response:
    """The chat as SillyTavern files: one JSONL, or a zip with every branch's JSONL."""
    data, name, media = chat_views.export_archive(ctx.chats, chat_id)
    return Response(data, media_type=media, headers=library_views.attachment(name))


@router.get("/{chat_id}/tree")
def chat_tree(chat_id: str, ctx: AppContext = Depends(context)) -> list[dict[str, object]]:
    """Every message of the chat as a tree, for the tree view."""
    return chat_views.chat_tree(ctx.chats, chat_id)


@router.get("/{chat_id}/graph")
def chat_graph(chat_id: str, ctx: AppContext = Depends(context)) -> dict[str, object]:
    """The chat's forks as a compressed graph (runs of messages, not every message)."""
    ctx.chats.get_chat(chat_id)
    return chat_views.chat_graph(ctx.chats, chat_id)


@router.get("/{chat_id}/forks")
def chat_forks(
    chat_id: str,
    ids: str = Query(description="message ids, comma-separated (at most 100)"),
    ctx: AppContext = Depends(context),
) -> dict[str, list[dict[str, object]]]:
    """For each message named: the candidates at its place, each with how many messages
    follow it on the way it last went (what a switch in the middle leaves behind)."""
    wanted = [i for i in ids.split(",") if i][:100]
    return chat_views.candidates_follow(ctx.chats, chat_id, wanted)


@router.post("/{chat_id}/messages/{node_id}/show", response_model=ChatOut)
def show_message(
    chat_id: str, node_id: str, body: RevisionIn, ctx: AppContext = Depends(context)
) -> ChatOut:
    """Make the path go through a message (from the tree view); it continues where it last went."""
    _node_of(ctx, chat_id, node_id)
    old_leaf = ctx.chats.get_chat(chat_id).active_leaf_id
    ctx.chats.select_candidate(chat_id, node_id, revision=body.revision)
    return _moved(ctx, chat_id, old_leaf)


@router.get("/{chat_id}/settings", response_model=ChatSettingsOut)
def chat_settings(chat_id: str, ctx: AppContext = Depends(context)) -> ChatSettingsOut:
    """The chat's author's note (as it stands at the end of the path) and its lorebook."""
    chat = ctx.chats.get_chat(chat_id)
    note = ctx.chats.state_at(chat_id).authors_note
    book = chat.metadata.get("world_info")
    return ChatSettingsOut(
        authors_note=note.to_json() if note else None,
        lorebook=book if isinstance(book, str) and book else None,
        revision=chat.revision,
    )


@router.put("/{chat_id}/authors-note", response_model=ChatSettingsOut)
def set_authors_note(
    chat_id: str, body: AuthorsNoteIn, ctx: AppContext = Depends(context)
) -> ChatSettingsOut:
    """Set the author's note from here on (state on the path: other branches keep theirs)."""
    note = AuthorsNote(
        prompt=body.prompt,
        interval=body.interval,
        depth=body.depth,
        position=body.position,
        role=body.role,
    )
    ctx.chats.update_state(chat_id, revision=body.revision, authors_note=note)
    return chat_settings(chat_id, ctx)


@router.post("/{chat_id}/hide-range", response_model=ChatOut)
def hide_range(chat_id: str, body: HideRangeIn, ctx: AppContext = Depends(context)) -> ChatOut:
    """Hide (or show again) the messages `start` to `end` of the path, both included."""
    outcome = ctx.chats.hide_range(
        chat_id,
        body.start,
        body.end,
        hidden=body.hidden,
        revision=body.revision,
    )
    first = outcome.node.parent_id if outcome.node else None
    return usecases.changed_view(ctx, chat_id, below=first)


@router.get("/{chat_id}/context", response_model=ContextOut)
def context_start(chat_id: str, ctx: AppContext = Depends(context)) -> ContextOut:
    """Where the context began for the last reply on the path, as recorded when it was
    sent: the page's "context cut" line, with no prompt assembly."""
    found = inspector.recorded_context(ctx.chats, chat_id, within=usecases.WINDOW)
    return ContextOut(reply_id=found.reply_id, first_message_in_context=found.first_message)


def stopper(ctx: AppContext) -> Callable[[str], bool]:
    """`/stop` from a script (run on a worker thread): the chat's running generations are
    stopped on the server's loop; whether any was running."""

    def stop(chat_id: str) -> bool:
        running = ctx.generation.registry.for_chat(chat_id, running_only=True)
        for run in running:
            anyio.from_thread.run(ctx.generation.stop, run.id)
        return bool(running)

    return stop


@router.post("/{chat_id}/script", response_model=ScriptOut)
def run_script(
    chat_id: str, body: ScriptIn, request: Request, ctx: AppContext = Depends(context)
) -> ScriptOut:
    """Run an STscript in the chat: its messages and hides are written to the chat, its
    chat variables recorded on the active leaf, its global ones in the library. An error
    names the command and the line:column."""

    def ask(generation: Generation) -> str:
        # The route runs on a worker thread; the model is asked on the server's loop.
        return anyio.from_thread.run(quiet_text, ctx.generation, chat_id, generation)

    scripts = ScriptService(ctx.chats, owner=current_user(request), stopper=stopper(ctx))
    run = scripts.run(body.text, chat_id=chat_id, revision=body.revision, ask=ask, typed=body.input)
    if run.changed or run.first_changed is not None:
        view = usecases.changed_view(ctx, chat_id, below=run.first_changed)
    else:
        view = usecases.unchanged_view(ctx, chat_id)
    return ScriptOut(
        chat=view,
        pipe=run.result.pipe,
        notices=[ScriptNoticeOut(severity=s, text=t) for s, t in run.notices],
        follow_up=run.follow_up,
        aborted=run.result.aborted,
        input=run.input,
    )


@router.get("/{chat_id}/variables", response_model=VariablesOut)
def chat_variables(
    chat_id: str, request: Request, ctx: AppContext = Depends(context)
) -> VariablesOut:
    """The chat variables where the chat's active branch ends, and the global ones."""
    scripts = ScriptService(ctx.chats, owner=current_user(request))
    chat = ctx.chats.get_chat(chat_id)
    return VariablesOut(
        local=scripts.chat_variables(chat_id),
        global_=scripts.global_variables(),
        node_id=chat.active_leaf_id,
        revision=chat.revision,
    )


@router.put("/{chat_id}/variables", response_model=VariablesOut)
def set_chat_variables(
    chat_id: str, body: ChatVariablesIn, request: Request, ctx: AppContext = Depends(context)
) -> VariablesOut:
    """Replace the chat variables from the active message on (a new state on the path:
    earlier messages and other branches keep theirs; undo restores them)."""
    ScriptService(ctx.chats, owner=current_user(request)).set_chat_variables(
        chat_id, body.local, revision=body.revision
    )
    return chat_variables(chat_id, request, ctx)
