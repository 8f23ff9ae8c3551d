"""Small use cases the page needs that no service offers yet; each calls services only.

Kept apart and named for what they do, so each can move into the service that owns
its concept without touching the routes.
"""

from __future__ import annotations

import io
import zipfile
from datetime import UTC, datetime
from typing import Any

from taverna.engine.macros.evaluate import MacroContext, evaluate
from taverna.errors import NotFound, TavernaError
from taverna.formats.st_chat import write_chat
from taverna.model.chat import CharacterRef, Chat, NodeRole
from taverna.model.persona import Persona
from taverna.model.prompt import Prompt
from taverna.providers.builders import build_request
from taverna.providers.request import Api
from taverna.server.context import AppContext
from taverna.server.schemas import ChatOut, ChatSummaryOut, PersonaRef, PromptOut, TaskOut
from taverna.server.views import chat_out, chat_summary_out
from taverna.services.connections import Connection
from taverna.services.generation import GenerationService, Turn, TurnKind
from taverna.services.interchange import InterchangeService
from taverna.services.library import LibraryKind, LibraryService


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


def default_persona(ctx: AppContext, owner: str = "") -> Persona | None:
    """The persona marked default, else the first one, else None."""
    personas = [
        Persona.model_validate(dict(d.data))
        for d in ctx.store.find_documents(LibraryKind.PERSONA.value, owner=owner)
    ]
    return next((p for p in personas if p.is_default), personas[0] if personas else None)


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


def start_chat(ctx: AppContext, character_id: str, *, title: str | None, owner: str) -> Chat:
    """A new chat with a character, opened by its greeting (alternate greetings as candidates).

    `{{char}}` and `{{user}}` in the greetings are filled in as the chat starts, as
    SillyTavern does for the first message.
    """
    lib = LibraryService(ctx.store, owner=owner)
    card = lib.character(character_id)
    character = card.character
    persona = default_persona(ctx, owner)
    user = (persona.name if persona else "") or "User"
    names = MacroContext(user=user, char=character.name)
    greetings = [evaluate(text, names).text for text in character.greetings]
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    outcome = ctx.chats.create_chat(
        title or f"{character.name} – {stamp}",
        characters=[CharacterRef(character.name, character_id)],
        user_name=user,
        greetings=greetings,
        greeting_speaker=character.name,
        owner=owner,
    )
    return outcome.chat


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


def prompt_json(prompt: Prompt) -> dict[str, Any]:
    """A Prompt as plain JSON for the inspector."""
    ledger = prompt.ledger
    return {
        "kind": prompt.kind,
        "messages": [
            {"role": m.role.value, "content": m.content, "name": m.name, "source": m.source}
            for m in prompt.messages
        ],
        "text": prompt.text,
        "stop": list(prompt.stop),
        "prefill": prompt.prefill,
        "sampling": dict(prompt.sampling),
        "ledger": {
            "items": [
                {
                    "kind": i.kind,
                    "source": i.source,
                    "tokens": i.tokens,
                    "included": i.included,
                    "reason": i.reason,
                    "position": i.position,
                }
                for i in ledger.items
            ],
            "total_tokens": ledger.total_tokens,
            "budget": ledger.budget,
            "trace": [dict(t) for t in ledger.trace],
        },
    }


def inspect_prompt(ctx: AppContext, chat_id: str, node_id: str | None) -> PromptOut:
    """Build (without sending) the prompt for the next reply, or for the reply `node_id`.

    A past reply's prompt is built again from the path that led to it, with today's
    card, preset and lorebooks.
    """
    service: GenerationService | None = ctx.services.get("generation")
    if service is None:
        raise TavernaError("prompt building is not available in this server")
    chat = ctx.chats.get_chat(chat_id)
    path = list(ctx.chats.active_path(chat_id).nodes)
    kind = TurnKind.NORMAL
    if node_id is not None:
        node = ctx.store.get_node(chat_id, node_id)
        # a swipe's path ends with the reply it replaces; the assembly leaves that one out
        if node.role is NodeRole.ASSISTANT:
            path, kind = ctx.store.path_to(chat_id, node.id), TurnKind.SWIPE
        else:
            path = ctx.store.path_to(chat_id, node.parent_id) if node.parent_id else []
    try:
        connection: Connection | None = service.connections.get(None)
    except NotFound:
        # Without a connection the prompt is still shown, as Chat Completion builds it.
        connection = None
    api = connection.api if connection else Api.OPENAI
    built = service.build_prompt(Turn(chat, tuple(path), kind, api, False))
    prompt = built if isinstance(built, Prompt) else built.prompt
    request_json: dict[str, Any] | None = None
    if connection is not None:
        options = service.connections.request_options(
            connection,
            user_name=chat.user_name or "User",
            char_name=chat.characters[0].name if chat.characters else "",
        )
        request = build_request(prompt, connection.api, options, base_url=connection.url, key="")
        request_json = {"url": request.url, "body": dict(request.body)}
    ids = {n.id for n in path}
    included = [
        i.source
        for i in prompt.ledger.items
        if i.included and i.kind == "history" and i.source in ids
    ]
    order = {n.id: k for k, n in enumerate(path)}
    visible = [n for n in path if not n.hidden]
    first = min(included, key=lambda s: order[s]) if included else None
    # The line goes above the oldest message sent, when older visible ones were cut.
    cut = first if first and visible and visible[0].id != first else None
    return PromptOut(
        prompt=prompt_json(prompt),
        request=request_json,
        first_message_in_context=cut,
        included_message_ids=included,
    )


def set_chat_lorebook(
    ctx: AppContext, chat_id: str, lorebook_id: str | None, *, owner: str, revision: int
) -> Chat:
    """Record a chat's own lorebook in its metadata (`world_info`, as SillyTavern's header has it)."""
    name = ""
    if lorebook_id:
        name = LibraryService(ctx.store, owner=owner).get(LibraryKind.LOREBOOK, lorebook_id).name
    with ctx.store.write(chat_id, revision=revision, label="chat lorebook") as w:
        metadata = dict(w.chat.metadata)
        if name:
            metadata["world_info"] = name
        else:
            metadata.pop("world_info", None)
        w.update_chat(metadata=metadata)
    return ctx.store.get_chat(chat_id)


def export_chat(ctx: AppContext, chat_id: str) -> tuple[bytes, str, str]:
    """A chat's SillyTavern files for download: `(bytes, file name, media type)`.

    A chat without branches is one JSONL; with branches or checkpoints, a zip of the
    main file and one file per branch, linked as SillyTavern links them.
    """
    service = InterchangeService(ctx.store)
    files = service.export_files(chat_id)
    texts = [(f"{item.name}.jsonl", write_chat(item.document)) for item in files]
    if len(texts) == 1:
        name, text = texts[0]
        return text.encode("utf-8"), name, "application/jsonl"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in texts:
            archive.writestr(name, text)
    return buffer.getvalue(), f"{files[0].name}.zip", "application/zip"


def chat_tree(ctx: AppContext, chat_id: str) -> list[dict[str, Any]]:
    """The whole tree for the tree view, depth-first, deleted messages left out.

    `level` grows only at forks, so a long chain without alternatives stays flat;
    `shown` marks the nodes worth a line (roots, the candidates of a fork, leaves and
    branch heads); `on_path` marks the active path.
    """
    tree = ctx.store.tree(chat_id)
    alive = {n.id for n in tree.nodes if not n.deleted}
    kids = {k: [n for n in v if n.id in alive] for k, v in tree.children().items()}
    heads: dict[str, list[str]] = {}
    for branch in tree.branches:
        if branch.head_id:
            heads.setdefault(branch.head_id, []).append(branch.name)
    on_path = {n.id for n in ctx.store.active_path(chat_id).nodes}
    out: list[dict[str, Any]] = []
    stack = [(n, 0, True) for n in reversed(kids.get(None, []))]
    while stack:
        node, level, fork_child = stack.pop()
        children = kids.get(node.id, [])
        out.append(
            {
                "id": node.id,
                "parent_id": node.parent_id,
                "depth": node.depth,
                "level": level,
                "role": node.role.value,
                "name": node.speaker,
                "snippet": node.content[:120],
                "on_path": node.id in on_path,
                "branches": heads.get(node.id, []),
                "shown": fork_child or not children or node.id in heads,
            }
        )
        forked = len(children) > 1
        for child in reversed(children):
            stack.append((child, level + (1 if forked else 0), forked))
    return out
