"""The prompt inspector: the prompt of the next reply, or of a past one, with its ledger.

Nothing is sent: the next prompt is built as a dry run (lorebook timers and macro
side effects are not recorded) over the generation service's long-lived token-count
cache, so a preview after a turn costs little more than the new messages. It is shown
as it would be sent: the interceptors and the plugins' prompt handlers have had their
say, and the ledger places each part where it ended up.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from taverna.engine.assembly.context import GenerationType
from taverna.errors import NotFound
from taverna.model.chat import GenerationInfo, NodeRole
from taverna.providers.builders import build_request
from taverna.providers.request import Api
from taverna.services.chats import sent_prompts
from taverna.services.chats.sent_prompts import prompt_json
from taverna.services.chats.service import ChatService
from taverna.services.connections.service import Connection
from taverna.services.turns import GenerationService
from taverna.services.turns.chat_connection import connection_for
from taverna.services.turns.prefix_reuse import reuse_for


@dataclass(frozen=True)
class PromptView:
    """A prompt as the inspector shows it."""

    prompt: dict[str, Any]
    # The request as the default connection would send it (None without a connection).
    request: dict[str, Any] | None
    # The oldest message sent, when older visible ones were cut by the budget.
    first_message_in_context: str | None
    included_message_ids: list[str]
    # True: the prompt a stored reply was generated from, as it was sent. False: built
    # now (the next reply's, or a past reply's whose record is missing, with today's
    # card, preset and lorebooks).
    as_sent: bool = False
    # What the API said of a past reply's tokens (`reply_usage`); None for the next reply.
    usage: dict[str, Any] | None = None
    # The prefix it shares with the prompt of the reply before it (`prefix_reuse.py`):
    # tokens reused and where it first differs; None without an earlier recorded prompt.
    reuse: dict[str, Any] | None = None


def reply_usage(generation: GenerationInfo | None) -> dict[str, Any] | None:
    """A reply's tokens as its API reported them: the prompt's, how many of those its
    prompt cache gave (`cached`), were new to it (`new`) or written to it (`written`),
    and the reply's. None when the reply was not generated or nothing was reported."""
    if generation is None:
        return None
    extras = generation.extras
    prompt, cached = generation.prompt_tokens, extras.get("cached_tokens")
    written = extras.get("cache_write_tokens")
    if prompt is None and generation.completion_tokens is None:
        return None
    new = prompt - (cached or 0) if prompt is not None else None
    return {
        "prompt": prompt,
        "cached": cached,
        "new": new,
        "written": written,
        "reply": generation.completion_tokens,
        "model": generation.model,
    }


def recorded_view(record: dict[str, Any]) -> PromptView:
    """The inspector's view of a reply's stored record."""
    # The ledger lists the chat's messages oldest first.
    history = [i for i in record["prompt"]["ledger"]["items"] if i["kind"] == "history"]
    included = [i["source"] for i in history if i["included"]]
    cut = any(not i["included"] for i in history)
    return PromptView(
        record["prompt"],
        record.get("request"),
        included[0] if cut and included else None,
        included,
        as_sent=True,
    )


@dataclass(frozen=True)
class RecordedContext:
    """Where the model's view of a chat began for its last reply, as recorded."""

    reply_id: str | None
    # The oldest message that reply was sent, when older visible ones were cut.
    first_message: str | None


def recorded_context(chats: ChatService, chat_id: str, *, within: int) -> RecordedContext:
    """The context start kept with the last generated reply among the path's last
    `within` messages: one record read, no prompt built (the page's "context cut" line).
    Nothing is known when there is no such reply or it has no record."""
    store = chats.store
    window = store.path_before(chat_id, None, limit=within)
    for entry in reversed(window.entries):
        node = entry.node
        if node.role is not NodeRole.ASSISTANT or node.generation is None:
            continue
        data = store.sent_prompt(chat_id, node.id)
        if data is None:
            break  # an older reply's record would tell of an older context
        view = recorded_view(sent_prompts.decode(data))
        return RecordedContext(node.id, view.first_message_in_context)
    return RecordedContext(None, None)


def inspect_prompt(service: GenerationService, chat_id: str, node_id: str | None) -> PromptView:
    """Build (without sending) the prompt for the next reply, or for the reply `node_id`.

    A past reply shows the prompt it was generated from, as it was sent; a reply with no
    record (stored before records were kept, imported, or written by hand) gets its
    prompt built again from the path that led to it, with today's card, preset and
    lorebooks.
    """
    store = service.store
    chat = store.get_chat(chat_id)
    end, kind = chat.active_leaf_id, GenerationType.NORMAL
    usage: dict[str, Any] | None = None
    if node_id is not None:
        node = store.get_node(chat_id, node_id)
        if node.role is NodeRole.ASSISTANT:
            usage = reply_usage(node.generation)
            data = store.sent_prompt(chat_id, node.id)
            if data is not None:
                view = recorded_view(sent_prompts.decode(data))
                reuse = _reuse(service, chat_id, view.prompt, node.id)
                return replace(view, usage=usage, reuse=reuse)
            # a swipe's path ends with the reply it replaces; the assembly leaves it out
            end, kind = node.id, GenerationType.SWIPE
        else:
            end = node.parent_id
    try:
        connection: Connection | None = connection_for(service.connections.of(chat.owner), chat)
    except NotFound:
        # Without a connection the prompt is still shown, as Chat Completion builds it.
        connection = None
    api = connection.api if connection else Api.OPENAI
    model = connection.model if connection else ""
    settings = connection.options if connection else {}
    # As a generation sends it: after the interceptors and the prompt handlers.
    turn = service.turn(chat, end, kind, api, dry_run=True, model=model, options=settings)
    if connection is not None:
        owned = service.connections.of(chat.owner)
        turn = replace(turn, backend=owned.backend_tokenizer(connection))
    prompt = service.prompt_to_send(turn)
    request_json: dict[str, Any] | None = None
    if connection is not None:
        connections = service.connections.of(chat.owner)
        base_url, _key = connections.endpoint_now(connection)
        options = connections.request_options(
            connection,
            user_name=chat.user_name or "User",
            char_name=chat.characters[0].name if chat.characters else "",
        )
        request = build_request(prompt, connection.api, options, base_url=base_url, key="")
        request_json = {"url": request.url, "body": dict(request.body)}
    sources = [i.source for i in prompt.ledger.items if i.included and i.kind == "history"]
    depth = {n.id: n.depth for n in store.get_nodes(chat_id, sources)}
    included = [source for source in sources if source in depth]
    first = min(included, key=depth.__getitem__) if included else None
    # The line goes above the oldest message sent, when the budget cut older ones.
    cut = first if prompt.ledger.history_stopped else None
    shown = prompt_json(prompt)
    reuse = _reuse(service, chat_id, shown, None) if node_id is None else None
    return PromptView(shown, request_json, cut, included, as_sent=False, usage=usage, reuse=reuse)


def _reuse(
    service: GenerationService, chat_id: str, prompt: dict[str, Any], reply: str | None
) -> dict[str, Any] | None:
    found = reuse_for(service.store, chat_id, prompt, reply=reply)
    return found.to_json() if found is not None else None
