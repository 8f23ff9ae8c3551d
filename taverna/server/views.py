"""Turning the conversation tree into the shapes the page reads."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from taverna.model.chat import BranchSummary, Chat, ChatListing, PathEntry, PathWindow
from taverna.server.schemas import (
    BranchOut,
    ChatConnectionOut,
    ChatOut,
    ChatSummaryOut,
    MessageOut,
    ParticipantOut,
    PersonaRef,
    TaskOut,
    ToolCallOut,
    WindowOut,
)
from taverna.services.chats.images import shown_image
from taverna.services.turns.chat_connection import chat_choice


def avatar_url(document_id: str | None) -> str | None:
    return f"/api/characters/{document_id}/avatar" if document_id else None


def message_out(
    entry: PathEntry, chat: Chat, shown: str | None = None, shown_reasoning: str | None = None
) -> MessageOut:
    node = entry.node
    # The speaker's own picture; a member without a card gets none (a lettered circle),
    # and only a message naming no member shows the first character's.
    member = next((c for c in chat.characters if c.name == node.speaker), None)
    if member is not None:
        speaker_doc = member.document_id
    elif node.role.value in ("system", "narrator"):
        speaker_doc = None
    else:
        speaker_doc = chat.characters[0].document_id if chat.characters else None
    return MessageOut(
        id=node.id,
        parent_id=node.parent_id,
        role=node.role.value,
        name=node.speaker,
        content=node.content,
        shown=shown,
        shown_reasoning=shown_reasoning,
        hidden=node.hidden,
        position=entry.position,
        candidate_index=entry.candidate_index + 1,
        candidate_count=entry.candidate_count,
        created=node.created.isoformat() if node.created else None,
        generated=node.generation is not None,
        avatar_url=avatar_url(speaker_doc) if node.role.value != "user" else None,
        generation=node.generation.to_json() if node.generation else None,
        image_url=shown_image(node.extras),
        tool_calls=tool_calls_out(node.extras),
    )


def tool_calls_out(extras: Mapping[str, Any]) -> list[ToolCallOut] | None:
    """The tool calls a tool step records (`tool_invocations`), None for any other message."""
    found = extras.get("tool_invocations")
    if not isinstance(found, list):
        return None
    calls = []
    for item in found:
        if isinstance(item, Mapping):
            calls.append(
                ToolCallOut(
                    id=str(item.get("id", "")),
                    name=str(item.get("name", "")),
                    arguments=_text(item.get("arguments", "")),
                    result=_text(item.get("result", "")),
                )
            )
    return calls or None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def branch_out(summary: BranchSummary) -> BranchOut:
    last = summary.last_message
    return BranchOut(
        id=summary.branch.id,
        name=summary.branch.name,
        head_id=summary.branch.head_id,
        length=summary.length,
        last_message=last.content[:200] if last else None,
        active=summary.active,
    )


def chat_out(
    window: PathWindow,
    branches: list[BranchSummary],
    *,
    persona: PersonaRef,
    task: TaskOut | None = None,
    changed: bool = False,
    shown: Mapping[str, str] | None = None,
    shown_reasoning: Mapping[str, str] | None = None,
) -> ChatOut:
    """A chat with one window of its path; `changed`: the window starts where a write
    may have changed the path, so its messages replace the page's from there on;
    `shown`, `shown_reasoning`: what display-only regex scripts make of some messages'
    texts and reasonings, by id."""
    chat = window.chat
    book = chat.metadata.get("world_info")
    choice = chat_choice(chat)
    return ChatOut(
        id=chat.id,
        title=chat.title,
        revision=chat.revision,
        characters=[
            ParticipantOut(id=c.document_id, name=c.name, avatar_url=avatar_url(c.document_id))
            for c in chat.characters
        ],
        persona=persona,
        messages=[
            message_out(
                e, chat, (shown or {}).get(e.node.id), (shown_reasoning or {}).get(e.node.id)
            )
            for e in window.entries
        ],
        window=WindowOut(
            total=window.total,
            start=window.start,
            has_older=window.has_older,
            has_newer=window.has_newer,
            changed_from=window.start if changed else None,
        ),
        branches=[branch_out(b) for b in branches],
        lorebook=book if isinstance(book, str) and book else None,
        task=task,
        group_id=chat.group_id,
        connection=ChatConnectionOut(name=choice.name, model=choice.model) if choice else None,
    )


def chat_summary_out(listing: ChatListing) -> ChatSummaryOut:
    chat = listing.chat
    return ChatSummaryOut(
        id=chat.id,
        title=chat.title,
        revision=chat.revision,
        character_ids=[c.document_id for c in chat.characters if c.document_id],
        character_names=[c.name for c in chat.characters],
        message_count=listing.path_length,
        branch_count=listing.branch_count,
        updated=chat.updated.isoformat() if chat.updated else None,
        group_id=chat.group_id,
    )
