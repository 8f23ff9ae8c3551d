"""Drafts: the text a failed, stopped or impersonated generation left, kept as a library
document of kind `draft` until the person keeps it (stored where the generation would
have put it) or drops it. A draft the database cannot take waits in the journal."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from taverna.engine.assembly.context import GenerationType
from taverna.errors import NotFound, TavernaError
from taverna.model.chat import GenerationInfo, NodeRole
from taverna.services.chats.service import ChatService, WriteResult
from taverna.services.turns.journal import ReplyJournal
from taverna.services.turns.plan import Plan
from taverna.services.turns.runs import Draft
from taverna.store.repository import Document, Store

logger = logging.getLogger(__name__)

DRAFT_KIND = "draft"
# What a draft document holds.
_DRAFT_DATA = (
    "chat_id",
    "kind",
    "anchor_id",
    "text",
    "reason",
    "cause",
    "continued_stripped",
    "generation_id",
    "created",
)


def journal_entry(journal: ReplyJournal | None, op: str, fields: Mapping[str, Any]) -> bool:
    """Keep what the database could not take in the journal; False when there is no
    journal or it could not be written either."""
    if journal is None:
        return False
    try:
        journal.write(op, fields)
    except Exception:
        logger.exception(
            "could not write generation %s to the journal", fields.get("generation_id")
        )
        return False
    return True


def draft_fields(
    plan: Plan, text: str, reason: str, cause: str | None, created: datetime
) -> dict[str, Any]:
    """What a draft of `plan`'s generation holds (the start of a reply's record too)."""
    return {
        "chat_id": plan.chat.id,
        "owner": plan.chat.owner,
        "kind": plan.kind.value,
        "anchor_id": plan.anchor_id,
        "text": text,
        "reason": reason,
        "cause": cause,
        "continued_stripped": plan.continued_stripped,
        "generation_id": plan.run.id,
        "created": created.isoformat(),
    }


class Drafts:
    """The drafts of generations, in the store (or, while it is away, the journal)."""

    def __init__(
        self,
        store: Store,
        chats: ChatService,
        *,
        clock: Callable[[], datetime],
        owner: str = "",
        journal: ReplyJournal | None = None,
    ) -> None:
        """`owner`: the account a draft of a chat that is gone is kept for."""
        self.store = store
        self.chats = chats
        self.clock = clock
        self.owner = owner
        self.journal = journal

    def of_chat(self, chat_id: str) -> list[Draft]:
        """The chat's drafts, oldest first."""
        owner = self.store.get_chat(chat_id).owner
        docs = self.store.find_documents(DRAFT_KIND, owner=owner)
        return [d for d in (self._draft(doc) for doc in docs) if d.chat_id == chat_id]

    def store_draft(self, draft_id: str, *, revision: int | None = None) -> WriteResult:
        """Store a draft where its generation would have put it, then forget the draft.

        Stored by the rules a generation's result follows (shown only if the person is
        still where it goes), without the turn's state, which a draft does not keep;
        `revision`: the one the caller read (a chat changed since is a conflict), else
        the chat's current one.
        """
        draft = self._draft(self.store.get_document(draft_id))
        chat = self.chats.get_chat(draft.chat_id)
        if revision is not None:
            chat = replace(chat, revision=revision)
        anchor_id = draft.anchor_id or None
        info = GenerationInfo(extras={"draft": draft.reason})
        label = "keep draft"
        if draft.kind is GenerationType.CONTINUE and anchor_id is not None:
            outcome = self.chats.extend(
                chat.id,
                anchor_id,
                draft.text,
                revision=chat.revision,
                trim_end=draft.stripped,
                label=label,
            )
        elif draft.kind is GenerationType.IMPERSONATE:
            outcome = self.chats.add_reply(
                chat.id,
                anchor_id,
                draft.text,
                revision=chat.revision,
                role=NodeRole.USER,
                speaker=chat.user_name,
                label=label,
            )
        elif (
            draft.kind in (GenerationType.SWIPE, GenerationType.REGENERATE)
            and anchor_id is not None
        ):
            outcome = self.chats.add_candidate(
                chat.id, anchor_id, draft.text, revision=chat.revision, generation=info, label=label
            )
        else:
            outcome = self.chats.add_reply(
                chat.id,
                anchor_id,
                draft.text,
                revision=chat.revision,
                speaker=chat.characters[0].name if chat.characters else "",
                generation=info,
                label=label,
            )
        self.forget_draft(draft_id)
        return outcome

    def forget_draft(self, draft_id: str) -> None:
        """Forget a draft."""
        doc = self.store.get_document(draft_id)
        if doc.kind != DRAFT_KIND:
            raise NotFound("no such draft", code="no_such_draft")
        self.store.delete_document(draft_id, revision=doc.revision)

    def _draft(self, doc: Document) -> Draft:
        data = doc.data
        return Draft(
            id=doc.id,
            chat_id=str(data.get("chat_id", "")),
            kind=GenerationType(data.get("kind", "normal")),
            anchor_id=data.get("anchor_id"),
            text=str(data.get("text", "")),
            reason=str(data.get("reason", "")),
            cause=data.get("cause"),
            revision=doc.revision,
            stripped=bool(data.get("continued_stripped", False)),
        )

    def fields(self, plan: Plan, text: str, reason: str, cause: str | None) -> dict[str, Any]:
        """What a draft of `plan`'s generation holds, made now."""
        return draft_fields(plan, text, reason, cause, self.clock())

    def put_draft(self, fields: Mapping[str, Any]) -> str:
        """Store a draft (its fields as `fields` gives them); its id."""
        doc = self.store.put_document(
            DRAFT_KIND,
            f"{fields['kind']} {fields.get('generation_id') or ''}".strip(),
            {key: fields.get(key) for key in _DRAFT_DATA},
            owner=fields.get("owner") or "",
        )
        return doc.id

    def keep_streamed(
        self, plan: Plan, text: str, reason: str, cause: str | None = None
    ) -> str | None:
        """Keep what a generation streamed as a draft; its id, None when nothing streamed
        (or when it waits in the journal for the database)."""
        if not text:
            return None
        return self._put_or_journal(self.fields(plan, text, reason, cause))

    def keep_orphaned(self, meta: Mapping[str, str], text: str) -> str | None:
        """Keep the text of a generation whose process died as a draft (its `meta` as
        the shared registry holds it); the draft's id, None when nothing streamed (or when
        it waits in the journal for the database)."""
        if not text:
            return None
        return self._put_or_journal(
            {
                "chat_id": meta["chat_id"],
                # the chat's account, whichever process adopts the run (a run shared
                # before its meta held the owner says "": its chat says whose it is)
                "owner": meta.get("owner") or self._owner_of(meta["chat_id"]),
                "kind": meta.get("kind", GenerationType.NORMAL.value),
                "anchor_id": meta.get("anchor_id") or None,
                "text": text,
                "reason": "the server stopped while it streamed",
                "cause": "interrupted",
                "continued_stripped": bool(meta.get("continued_stripped")),
                "generation_id": meta.get("generation_id"),
                "created": self.clock().isoformat(),
            }
        )

    def _put_or_journal(self, fields: Mapping[str, Any]) -> str | None:
        try:
            return self.put_draft(fields)
        except TavernaError:
            raise
        except Exception:
            # the database is away: the draft waits in the journal
            if not journal_entry(self.journal, "draft", fields):
                raise
            return None

    def _owner_of(self, chat_id: str) -> str:
        """The account of a chat (this service's own when the chat is gone)."""
        try:
            return self.store.get_chat(chat_id).owner
        except NotFound:
            return self.owner
