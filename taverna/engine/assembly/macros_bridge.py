"""Macros for one turn: the macro engine bound to the turn's context.

Variables set by `{{setvar}}` during assembly carry over to later texts of the same
turn, as they do in SillyTavern, whose macros write the chat's variables as they go.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from taverna.engine.assembly.context import AssemblyContext
from taverna.engine.assembly.memo import TurnMemo
from taverna.engine.macros import MacroContext, Variables, chat_seed, evaluate, has_macros

if TYPE_CHECKING:
    from taverna.engine.assembly.turn import CardFields


def chat_id_hash(context: AssemblyContext) -> int:
    """The number that seeds `{{pick}}` in this chat (algo-chat-ops.md §2.1, §8).

    A SillyTavern chat caches it in its metadata (`chat_id_hash`), and that value is
    used as it is; without one SillyTavern hashes `main_chat` (a branch's main chat)
    or else the chat's id. A chat made here has neither: its root message's id stands
    for the chat, so every branch of the tree draws the same.
    """
    meta = context.metadata.extras
    cached = meta.get("chat_id_hash")
    if (isinstance(cached, str) and cached.isdigit()) or (
        isinstance(cached, float) and cached.is_integer()
    ):
        cached = int(cached)
    # macros.js getChatIdHash: a missing or zero hash is computed, never hashed again.
    if isinstance(cached, int) and not isinstance(cached, bool) and cached:
        return cached
    main_chat = meta.get("main_chat")
    if isinstance(main_chat, str):
        return chat_seed(main_chat)
    return chat_seed(context.chat_id or (context.messages[0].id if context.messages else ""))


def instruct_macros(context: AssemblyContext, char_prompt: str) -> dict[str, str]:
    """The instruct, system-prompt and context-template macros (instruct-mode.js
    `replaceInstructMacros`): the sequences only with instruct mode on, the system prompt
    only when it is enabled (the card's own first where preferred), the example separator
    and chat start always."""
    settings = context.text_completion
    sequences = settings.instruct
    enabled = settings.instruct_enabled
    values: dict[str, str] = {}
    if enabled:
        values.update(
            instructSystemPromptPrefix=sequences.system_sequence_prefix,
            instructSystemPromptSuffix=sequences.system_sequence_suffix,
            instructInput=sequences.input_sequence,
            instructUserSuffix=sequences.input_suffix,
            instructOutput=sequences.output_sequence,
            instructSeparator=sequences.output_suffix,
            instructSystemPrefix=sequences.system_sequence,
            instructSystemSuffix=sequences.system_suffix,
            instructFirstOutput=sequences.first_output_sequence or sequences.output_sequence,
            instructLastOutput=sequences.last_output_sequence or sequences.output_sequence,
            instructStop=sequences.stop_sequence,
            instructUserFiller=sequences.user_alignment_message,
            instructSystemInstructionPrefix=sequences.last_system_sequence,
            instructFirstInput=sequences.first_input_sequence or sequences.input_sequence,
            instructLastInput=sequences.last_input_sequence or sequences.input_sequence,
        )
    if settings.system_prompt_enabled:
        default = settings.system_prompt.content
        prefer = context.power_user.prefer_character_prompt and char_prompt
        values["systemPrompt"] = char_prompt if prefer else default
        values["defaultSystemPrompt"] = default
    values["exampleSeparator"] = settings.context.example_separator
    values["chatStart"] = settings.context.chat_start
    return values


def max_prompt(context: AssemblyContext) -> int:
    """`{{maxPrompt}}`: the context size less the reply's (script.js getMaxContextSize)."""
    if context.api == "textgen":
        settings = context.text_completion
        return settings.max_context - settings.amount_gen
    return context.chat_completion.max_context - context.chat_completion.max_tokens


def macro_context(context: AssemblyContext) -> MacroContext:
    """The macro engine's view of this turn."""
    character = context.character if context.characters else None
    # {{lastMessage}} is the last message, hidden or not (macros.js getLastMessage); the
    # user's and the character's skip hidden ones. Newest first, stopping early.
    last = context.messages[-1] if context.messages else None
    last_user = next((m for m in reversed(context.messages) if not m.hidden and m.is_user), None)
    last_char = next(
        (m for m in reversed(context.messages) if not m.hidden and not m.is_user), None
    )

    def card(text: str) -> str:
        # script.js getCharacterCardFields: the values macros print are trimmed, no `\r`.
        return text.strip().replace("\r", "")

    return MacroContext(
        user=context.persona.name,
        char=character.name if character else "",
        group=", ".join(context.group_members) if context.is_group else None,
        description=card(character.description) if character else "",
        personality=card(character.personality) if character else "",
        scenario=card(context.metadata.scenario or character.scenario) if character else "",
        persona=card(context.persona.description),
        mes_examples=card(character.mes_example) if character else "",
        char_prompt=card(character.system_prompt) if character else "",
        char_jailbreak=card(character.post_history_instructions) if character else "",
        char_version=character.version if character else "",
        instruct=instruct_macros(context, card(character.system_prompt) if character else ""),
        model=context.chat_completion.model if context.api != "textgen" else "",
        max_prompt=max_prompt(context),
        last_message=last.text if last else "",
        last_message_id=(
            context.earlier.count + len(context.messages) - 1 if context.messages else None
        ),
        last_user_message=last_user.text if last_user else "",
        last_char_message=last_char.text if last_char else "",
        last_swipe_id=(context.messages[-1].swipe_count if context.messages else None),
        current_swipe_id=(context.messages[-1].swipe_index + 1 if context.messages else None),
        now=context.now,
        chat_id_hash=chat_id_hash(context),
        seed=context.seed,
        variables=Variables(
            local=dict(context.metadata.variables), global_=dict(context.global_variables)
        ),
        # memory/index.js registers `{{summary}}`: the stored summary, whatever its source.
        extra={"summary": context.summary} if context.summary_settings.enabled else {},
    )


_MACRO = re.compile(r"\{\{([^{}]*)\}\}")
# Macros whose value is fixed by the names and card fields (the memo key holds them all).
_NAME_MACROS = frozenset(
    {"char", "user", "group", "charifnotgroup", "personality", "scenario", "description", "persona"}
)


def _names_only(text: str) -> bool:
    """Whether the only macros in `text` are names and card fields (same result all chat long)."""
    found = _MACRO.findall(text)
    return (
        bool(found)
        and all(m.strip().lower() in _NAME_MACROS for m in found)
        and (text.count("{{") == len(found))
    )


def substitute_for(context: AssemblyContext, memo: TurnMemo | None = None) -> TurnMacros:
    """A substitution function for this turn; variable changes carry to the next call.

    With a `memo` kept across turns, texts whose only macros are names ({{char}},
    {{user}}, ...) are resolved once for the same names.
    """
    return TurnMacros(context, memo)


class TurnMacros:
    """The macro engine for one turn: a `Substitute` that keeps the chat's variables.

    `variables` are the chat variables after every text substituted so far; `adopt`
    takes over the variables the lorebook scan left (its entries run macros too).
    """

    def __init__(self, context: AssemblyContext, memo: TurnMemo | None = None) -> None:
        self._base = macro_context(context)
        self._memo = memo
        self._globals_before = dict(context.global_variables)

    @property
    def context(self) -> MacroContext:
        """The macro context as it stands now (card fields and variables included)."""
        return self._base

    @property
    def variables(self) -> Mapping[str, Any]:
        """The chat (local) variables as they stand now."""
        return self._base.variables.local

    @property
    def changed_globals(self) -> Mapping[str, Any] | None:
        """The global variables as the turn's macros left them, when they changed any."""
        now = dict(self._base.variables.global_)
        return now if now != self._globals_before else None

    def adopt(self, variables: Mapping[str, Any]) -> None:
        """Continue from these chat variables (what the lorebook scan left)."""
        current = self._base.variables
        self._base = replace(
            self._base, variables=Variables(local=dict(variables), global_=current.global_)
        )

    def use_card_fields(self, fields: CardFields) -> None:
        """Card macros print these fields (read once per generation, macros resolved)."""
        self._base = replace(
            self._base,
            description=fields.description,
            personality=fields.personality,
            scenario=fields.scenario,
            persona=fields.persona,
            mes_examples=fields.mes_examples,
            char_prompt=fields.system,
            char_jailbreak=fields.jailbreak,
        )

    def __call__(self, text: str, extra: Mapping[str, str]) -> str:
        # Most chat text has no macro at all: skip the engine without a regex search.
        if not text or (("{" not in text and "<" not in text) or not has_macros(text)):
            return text
        base = self._base
        memo = self._memo
        key = None
        if memo is not None and not extra and _names_only(text):
            key = (
                "macro",
                text,
                base.user,
                base.char,
                base.group,
                base.personality,
                base.scenario,
                base.description,
                base.persona,
            )
            known = memo.get(key)
            if known is not None:
                return str(known)
        call = base
        if extra:
            values = dict(extra)
            original = values.pop("original", None)
            group = values.pop("group", None)
            call = replace(
                base,
                original=original,
                extra={**base.extra, **values},
                group=group if group else base.group,
            )
        result = evaluate(text, call)
        self._base = replace(base, variables=result.variables)
        if key is not None and memo is not None:
            memo[key] = result.text
        return result.text
