"""Generations whose text goes back to a script: `/gen` and `/genraw` (algo-chat-ops.md §9.2).

`/gen` sends the chat's normal prompt with the script's prompt added as the quiet prompt
(SillyTavern's quiet generation); `/genraw` sends only the prompt, after an optional
system prompt, without the chat or the card. Nothing is written to the chat; the text
comes back to the script.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from taverna.engine.assembly.context import GenerationType
from taverna.engine.script import Generation
from taverna.errors import ProviderError, TavernaError
from taverna.model.prompt import Prompt, PromptMessage, Role
from taverna.providers.builders import build_request, stream_parser
from taverna.providers.events import StreamError, TextDelta
from taverna.services.turns import PreparedTurn
from taverna.services.turns.chat_connection import connection_for
from taverna.services.turns.service import GenerationService

__all__ = ["quiet_text"]


def _length(options: Mapping[str, str]) -> dict[str, Any]:
    raw = options.get("length")
    if raw is None or raw == "":
        return {}
    try:
        limit = int(raw)
    except ValueError:
        raise TavernaError(
            f"length={raw!r} is not a number of tokens",
            field="length",
            code="length_is_not_number_of",
            params={"raw": str(raw)},
        ) from None
    if limit < 1:
        raise TavernaError(
            "length must be at least 1", field="length", code="length_must_be_at_least"
        )
    return {"openai_max_tokens": limit, "genamt": limit}


def _stops(options: Mapping[str, str]) -> tuple[str, ...]:
    raw = options.get("stop")
    if not raw:
        return ()
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = raw
    if isinstance(parsed, str):
        return (parsed,)
    if isinstance(parsed, list) and all(isinstance(s, str) for s in parsed):
        return tuple(parsed)
    raise TavernaError(
        'stop must be a JSON list of texts, e.g. ["\\n"]',
        field="stop",
        code="stop_must_be_json_list",
    )


def _raw_prompt(system: str, text: str, as_text: bool, sampling: Mapping[str, Any]) -> Prompt:
    if as_text:
        joined = f"{system}\n\n{text}\n" if system else f"{text}\n"
        return Prompt(kind="text", text=joined, sampling=sampling)
    messages = [PromptMessage(Role.SYSTEM, system)] if system else []
    messages.append(PromptMessage(Role.USER, text))
    return Prompt(kind="chat", messages=tuple(messages), sampling=sampling)


def _trim_at_stop(text: str, stops: Sequence[str]) -> str:
    cut = min((text.find(s) for s in stops if s and s in text), default=-1)
    return text[:cut] if cut >= 0 else text


async def quiet_text(
    generation: GenerationService,
    chat_id: str,
    request: Generation,
    *,
    connection_name: str | None = None,
) -> str:
    """The model's text for a script's `/gen` or `/genraw` in chat `chat_id`."""
    options = dict(request.options or {})
    chat = generation.store.get_chat(chat_id)
    # the chat's account's connections: its keys and its endpoints
    connections = generation.connections.of(chat.owner)
    connection = connection_for(connections, chat, connection_name)
    sampling = _length(options)
    stops = _stops(options)
    if request.kind == "genraw":
        prompt = _raw_prompt(
            options.get("system", ""), request.prompt, connection.api.is_text_completion, sampling
        )
    else:
        turn = generation.turn(
            chat, chat.active_leaf_id, GenerationType.QUIET, connection.api, dry_run=True
        )
        turn = replace(turn, quiet_prompt=request.prompt)
        built = generation.build_serialized(turn)
        prompt = built.prompt if isinstance(built, PreparedTurn) else built
        prompt = replace(prompt, sampling={**prompt.sampling, **sampling})
    if stops:
        prompt = replace(prompt, stop=tuple(prompt.stop) + stops)
    base_url, key = await connections.endpoint(connection)
    members = tuple(c.name for c in chat.characters)
    request_options = connections.request_options(
        connection, user_name=chat.user_name or "User", char_name=members[0] if members else ""
    )
    sent = build_request(prompt, connection.api, request_options, base_url=base_url, key=key)
    said: list[str] = []
    async for event in connections.stream(
        sent,
        stream_parser(connection.api),
        client=generation.model_client(),
        secret=key,
        timeouts=generation.timeouts,
    ):
        if isinstance(event, TextDelta):
            said.append(event.text)
        elif isinstance(event, StreamError):
            raise ProviderError(
                f"/{request.kind} failed: {event.message}",
                code="generation_command_failed",
                params={"kind": str(request.kind), "message_name": str(event.message)},
            )
    return _trim_at_stop("".join(said), prompt.stop).strip()
