"""Counting what is being typed: its tokens with the tokenizer the chat's next prompt is
counted with, and that prompt's total (a dry run: nothing is written)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from taverna.engine.assembly.context import GenerationType
from taverna.engine.tokens.registry import get_tokenizer, tokenizer_label
from taverna.errors import NotFound
from taverna.providers.request import Api
from taverna.services.connections.service import Connection, ConnectionService
from taverna.services.turns.chat_connection import connection_for
from taverna.services.turns.turn import PreparedTurn
from taverna.services.turns.turn_prompts import TurnPrompts

# What typed text is counted with when a prompt names no tokenizer (a builder of tests').
FALLBACK_TOKENIZER = "cl100k_base"


@dataclass(frozen=True, slots=True)
class TokenCount:
    """What the input box shows: the typed text's tokens and the next prompt's total."""

    text: int
    prompt: int
    tokenizer: str  # as a person may read it (a model file by its name, not its path)


def count_typed(
    prompts: TurnPrompts,
    connections: ConnectionService,
    chat_id: str,
    text: str,
    connection: str | None = None,
) -> TokenCount:
    """`text`'s tokens and the chat's next prompt's total, built for `connection` (the
    chat's own when None; without any, as for OpenAI, as `warm` builds)."""
    prompts.foresee(chat_id, "", text)  # typing has paused: the text may well be sent
    chat = prompts.store.get_chat(chat_id)
    try:
        chosen: Connection | None = connection_for(connections.of(chat.owner), chat, connection)
    except NotFound:
        if connection is not None:
            raise
        chosen = None
    turn = prompts.turn(
        chat,
        chat.active_leaf_id,
        GenerationType.NORMAL,
        chosen.api if chosen else Api.OPENAI,
        dry_run=True,
        model=chosen.model if chosen else "",
        options=chosen.options if chosen else None,
    )
    if chosen is not None:
        turn = replace(turn, backend=connections.backend_tokenizer(chosen))
    built = prompts.build_serialized(turn)
    ledger = (built.prompt if isinstance(built, PreparedTurn) else built).ledger
    name = ledger.tokenizer or FALLBACK_TOKENIZER
    if turn.backend is not None and name == turn.backend.label and not turn.backend.failed:
        # the prompt was counted by the server: so is the text
        return TokenCount(turn.backend.count(text), ledger.total_tokens, tokenizer_label(name))
    return TokenCount(get_tokenizer(name).count(text), ledger.total_tokens, tokenizer_label(name))
