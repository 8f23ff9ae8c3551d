"""A finished reply as a record: plain data, read from the generation's plan only, that
the chat service stores in one transaction, or the journal keeps while the database
cannot take it."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict
from datetime import datetime
from typing import Any

from taverna.engine.assembly.context import GenerationType
from taverna.engine.group import clean_group_reply
from taverna.errors import StaleRevision
from taverna.model.chat import GenerationInfo
from taverna.providers.events import FinishReason
from taverna.services.chats.generated_reply import ToolStep
from taverna.services.chats.service import ChatService
from taverna.services.library.active_settings import write_global_variables
from taverna.services.turns.drafts import Drafts, draft_fields
from taverna.services.turns.kinds import REPLACING
from taverna.services.turns.plan import Plan
from taverna.services.turns.reply_text import trim_at_stop
from taverna.services.turns.runs import Completed, Ending
from taverna.services.turns.tool_rounds import Heard, tool_steps, with_tool_variables


def generation_info(
    plan: Plan, heard: Heard, started: datetime, started_clock: float, finished: datetime
) -> GenerationInfo:
    """What a reply records of how it was made (`started_clock`: perf_counter's start)."""
    extras: dict[str, Any] = {
        "connection": plan.connection.name,
        "kind": plan.kind.value,
        "seconds": round(time.perf_counter() - started_clock, 3),
    }
    if heard.first_token is not None:
        extras["first_token_seconds"] = round(heard.first_token - started_clock, 3)
    if heard.reasoning:
        extras["reasoning"] = "".join(heard.reasoning)
    if plan.tool_steps:
        extras["tool_rounds"] = len(plan.tool_steps)
    # what the API's prompt cache saved: prompt tokens read from it, and written to it
    if heard.usage.cached_tokens is not None:
        extras["cached_tokens"] = heard.usage.cached_tokens
    if heard.usage.cache_write_tokens is not None:
        extras["cache_write_tokens"] = heard.usage.cache_write_tokens
    finish = heard.finish
    return GenerationInfo(
        provider=plan.connection.api.value,
        model=plan.connection.model,
        started=started,
        finished=finished,
        prompt_tokens=heard.usage.input_tokens,
        completion_tokens=heard.usage.output_tokens,
        finish_reason=(finish.reason.value if finish else FinishReason.STOP.value),
        extras=extras,
    )


def reply_record(plan: Plan, text: str, info: GenerationInfo, created: datetime) -> dict[str, Any]:
    """What storing a finished reply takes, as plain data: what the journal keeps when
    the database cannot take it now (read from the plan only, never from the store)."""
    kind = plan.kind
    text = trim_at_stop(text, plan.prompt.stop)
    if kind is not GenerationType.CONTINUE:
        text = text.strip()
    chat = plan.chat
    speaker = plan.speaker or (chat.characters[0].name if chat.characters else "")
    if plan.members and kind is not GenerationType.IMPERSONATE:
        # algo-chat-ops.md §5.4: a group reply ends where another member's line starts,
        # and the speaker's own `Name:` is taken off (SillyTavern's cleanUpMessage)
        text = clean_group_reply(text, speaker, plan.members)
    turn_state = dict(plan.prompt.state)
    changed_globals = turn_state.pop("globalVariables", None)
    return {
        **draft_fields(plan, text, "", None, created),
        "speaker": speaker,
        "group": bool(plan.members),
        "generation": info.to_json(),
        "turn_state": with_tool_variables(plan, turn_state),
        "globals": changed_globals,
        "continued_text": plan.continued_text,
        "tool_steps": [asdict(step) for step in tool_steps(plan)],
    }


def store_reply(record: Mapping[str, Any], chats: ChatService, drafts: Drafts) -> Completed:
    """Have the chat service store a reply (`reply_record`), in one transaction at the
    chat's current revision (the person may have moved on; the rules say where it lands).
    An impersonation is kept as a draft."""
    if record["kind"] == GenerationType.IMPERSONATE.value:
        draft_id = drafts.put_draft({**record, "reason": "impersonation"})
        return Completed(Ending.IMPERSONATED, record["text"], draft_id=draft_id)
    # The revision the turn left the chat at, when the record knows it: no read first.
    # A chat that moved on since is read, and the reply lands by the rules at its revision.
    seen: int | None = record.get("revision")
    if seen is not None:
        try:
            return _write_reply(record, chats, seen)
        except StaleRevision:
            pass
    return _write_reply(record, chats, chats.get_chat(record["chat_id"]).revision)


def _write_reply(record: Mapping[str, Any], chats: ChatService, revision: int) -> Completed:
    """Store a reply record's reply at the chat's revision `revision`."""
    kind = GenerationType(record["kind"])
    text: str = record["text"]
    anchor_id: str | None = record.get("anchor_id")
    chat_id: str = record["chat_id"]
    info = GenerationInfo.from_json(record["generation"])
    turn_state = record["turn_state"]
    steps = [ToolStep(**step) for step in record.get("tool_steps") or ()]
    if kind is GenerationType.CONTINUE:
        assert anchor_id is not None
        outcome = chats.extend(
            chat_id,
            anchor_id,
            text,
            revision=revision,
            expected=record["continued_text"],
            trim_end=bool(record["continued_stripped"]),
            turn_state=turn_state,
            label=kind.value,
        )
    elif kind in REPLACING:
        assert anchor_id is not None
        outcome = chats.add_candidate(
            chat_id,
            anchor_id,
            text,
            revision=revision,
            # a solo reply speaks as before
            speaker=record["speaker"] if record["group"] else "",
            generation=info,
            turn_state=turn_state,
            replaces=kind is GenerationType.REGENERATE,
            label=kind.value,
            tool_steps=steps,
        )
    else:
        outcome = chats.add_reply(
            chat_id,
            anchor_id,
            text,
            revision=revision,
            speaker=record["speaker"],
            generation=info,
            turn_state=turn_state,
            tool_steps=steps,
            label=kind.value,
        )
    assert outcome.node is not None
    if record.get("globals") is not None:
        # the reply is stored: the globals its prompt's macros set are kept too
        write_global_variables(chats.store, record["globals"], record["owner"])
    return Completed(Ending.SAVED, text, node_id=outcome.node.id, revision=outcome.chat.revision)
