"""`assemble(context) -> Prompt`: one turn's prompt from every input of that turn.

The top of the engine: it joins prompt assembly (`assembly`), the Text Completion
builder (`textgen`), the lorebook and macro engines and the tokenizers. They are
reached through small function types, so each can be swapped in tests and the
assembly itself stays a pure function; nothing below imports this module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from taverna.engine.assembly.budget import MessageCost
from taverna.engine.assembly.chat_completion import build_chat_completion
from taverna.engine.assembly.context import AssemblyContext
from taverna.engine.assembly.lorebook_bridge import scan as lorebook_scan
from taverna.engine.assembly.macros_bridge import substitute_for
from taverna.engine.assembly.memo import TurnMemo
from taverna.engine.assembly.turn import Substitute, Turn, prepare_turn
from taverna.engine.assembly.world import LorebookScan
from taverna.engine.lorebook.regex_budget import RegexBudget
from taverna.engine.textgen import build_text_completion
from taverna.engine.tokens.base import Tokenizer
from taverna.engine.tokens.cache import CountCache, TokenCounter
from taverna.engine.tokens.registry import get_tokenizer
from taverna.engine.tokens.selection import (
    chat_completion_tokenizer,
    message_family,
    text_completion_tokenizer,
)
from taverna.model.prompt import Prompt

CountText = Callable[[str], int]
TextBuilder = Callable[[AssemblyContext, Turn, CountText], Prompt]


def assemble(
    context: AssemblyContext,
    *,
    substitute: Substitute | None = None,
    scan: LorebookScan | None = None,
    count_text: CountText | None = None,
    message_family: str | None = None,
    text_builder: TextBuilder | None = None,
    cost: MessageCost | None = None,
    counts: CountCache | None = None,
    regexes: RegexBudget | None = None,
) -> Prompt:
    """The prompt for this turn: Chat Completion messages or Text Completion text.

    Collaborators left out are the project's own: the macro engine, the lorebook
    engine and the tokenizer SillyTavern would pick for the model. Pass the same
    `cost` (from `message_cost`) turn after turn so only new text is tokenized; or,
    where a chat's `cost` is not kept, one long-lived `counts` (a bounded `CountCache`,
    keyed by tokenizer and text) for every chat and turn. `regexes` is the turn's time for
    user regexes (lorebook regex keys, regex scripts), shared by every assembly of one
    turn (a new `RegexBudget` when not given); what its limits stopped is listed in the
    ledger's `skipped_regexes`.
    """
    scan = scan or default_scan()
    if cost is None:
        if count_text is not None:
            cost = MessageCost(count_text, message_family or "tiktoken")
        else:
            cost = message_cost(context, counts)
    substitute = substitute or default_substitute(context, cost.memo)
    counter = cost.count_text
    # Lorebook entries under Chat Completion are counted as one "full" system message.
    world_count: CountText = cost.text if context.api != "textgen" else counter
    regexes = regexes if regexes is not None else RegexBudget()
    regexes.begin()
    turn = prepare_turn(context, substitute, scan, world_count, regexes)
    if context.api == "textgen":
        builder = text_builder or default_text_builder()
        prompt = builder(context, turn, counter)
    else:
        prompt = build_chat_completion(context, turn, cost)
    if turn.recalled:
        # Recalled messages are listed like lorebook entries: the block itself is a part.
        items = prompt.ledger.items + turn.recalled
        prompt = replace(prompt, ledger=replace(prompt.ledger, items=items))
    tokenizer = tokenizer_name(context) if count_text is None else ""
    return replace(
        prompt,
        ledger=replace(prompt.ledger, skipped_regexes=regexes.skipped(), tokenizer=tokenizer),
    )


def tokenizer_name(context: AssemblyContext) -> str:
    """The tokenizer SillyTavern would count this turn's prompt with."""
    if context.tokenizer:
        return context.tokenizer
    cc = context.chat_completion
    if context.api == "textgen":
        return text_completion_tokenizer(
            context.power_user.tokenizer,
            str(context.text_completion.extras.get("model", "")),
            cc.source,
            cc.model,
        )
    return chat_completion_tokenizer(cc.source, cc.model)


def message_cost(
    context: AssemblyContext, counts: CountCache | None = None, tokenizer: Tokenizer | None = None
) -> MessageCost:
    """Token costs for this chat's tokenizer with its message rule, cached as it counts.

    `counts`: the caller's long-lived text counts to read and fill (else a new one).
    `tokenizer`: one that counts instead of the chat's (the backend's own, asked by the
    caller). Claude's tokenizer always counts "full" (public/scripts/tokenizers.js).
    """
    name = tokenizer_name(context)
    chosen = tokenizer if tokenizer is not None else get_tokenizer(name)
    counter = TokenCounter(chosen, counts if counts is not None else CountCache())
    family = message_family(name, context.chat_completion.model)
    return MessageCost(counter.count, family, name == "claude")


def default_scan() -> LorebookScan:
    """The project's lorebook engine behind assembly's scan seam."""
    return lorebook_scan


def default_text_builder() -> TextBuilder:
    """The project's Text Completion builder."""
    return build_text_completion


def default_substitute(context: AssemblyContext, memo: TurnMemo | None = None) -> Substitute:
    """The macro engine bound to this turn's context (name-only texts kept in `memo`)."""
    return substitute_for(context, memo)
