"""`assemble(context) -> Prompt`: one turn's prompt from every input of that turn.

The engine packages assembly builds on (macros, lorebook activation, tokenizers,
Text Completion templates) are reached through small function types, so each can
be swapped in tests and the assembly itself stays a pure function.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from typing import Any

from taverna.engine.assembly.budget import MessageCost
from taverna.engine.assembly.chat_completion import build_chat_completion
from taverna.engine.assembly.context import AssemblyContext
from taverna.engine.assembly.turn import Substitute, Turn, prepare_turn
from taverna.engine.assembly.world import LorebookScan, no_lorebooks
from taverna.errors import TavernaError
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
) -> Prompt:
    """The prompt for this turn: Chat Completion messages or Text Completion text.

    Collaborators left out are the project's own: the macro engine, the lorebook
    engine and the tokenizer SillyTavern would pick for the model.
    """
    substitute = substitute or default_substitute(context)
    scan = scan or default_scan()
    counter, family = (
        (count_text, message_family or "tiktoken")
        if count_text is not None
        else default_counter(context)
    )
    cost = MessageCost(counter, family, always_full=family == "transcript-full")
    if cost.family == "transcript-full":
        cost.family = "transcript"
    # Lorebook entries under Chat Completion are counted as one "full" system message.
    world_count: CountText = cost.text if context.api != "textgen" else counter
    turn = prepare_turn(context, substitute, scan, world_count)
    if context.api == "textgen":
        builder = text_builder or default_text_builder()
        return builder(context, turn, counter)
    return build_chat_completion(context, turn, cost)


def default_counter(context: AssemblyContext) -> tuple[CountText, str]:
    """The tokenizer SillyTavern would count this prompt with, and its message rule."""
    tokens = importlib.import_module("taverna.engine.tokens.registry")
    selection = importlib.import_module("taverna.engine.tokens.selection")
    cache = importlib.import_module("taverna.engine.tokens.cache")
    if context.tokenizer:
        name = context.tokenizer
    elif context.api == "textgen":
        cc = context.chat_completion
        name = selection.text_completion_tokenizer(
            context.power_user.tokenizer,
            str(context.text_completion.extras.get("model", "")),
            cc.source,
            cc.model,
        )
    else:
        cc = context.chat_completion
        name = selection.chat_completion_tokenizer(cc.source, cc.model)
    counter = cache.TokenCounter(tokens.get_tokenizer(name))
    family = str(selection.message_family(name, context.chat_completion.model))
    if name == "claude":
        family = "transcript-full"  # tokenizers.js: Claude always counts "full"
    count: CountText = counter.count
    return count, family


def default_scan() -> LorebookScan:
    """The project's lorebook engine behind assembly's scan seam."""
    try:
        bridge = importlib.import_module("taverna.engine.assembly.lorebook_bridge")
    except ImportError:  # the lorebook engine is not installed in this build
        return no_lorebooks
    scan: LorebookScan = bridge.scan
    return scan


def default_text_builder() -> TextBuilder:
    """The project's Text Completion builder."""
    try:
        module = importlib.import_module("taverna.engine.textgen")
        builder: TextBuilder = module.build_text_completion
    except (ImportError, AttributeError) as error:
        raise TavernaError("Text Completion assembly is not available in this build") from error
    return builder


def default_substitute(context: AssemblyContext) -> Substitute:
    """The macro engine bound to this turn's context."""
    try:
        bridge = importlib.import_module("taverna.engine.assembly.macros_bridge")
        made: Substitute = bridge.substitute_for(context)
        return made
    except ImportError:
        return names_only(context)


_NAME_MACRO = re.compile(
    r"\{\{(char|user|charIfNotGroup|group|original|lastChatMessage)\}\}|<USER>|<BOT>", re.I
)


def names_only(context: AssemblyContext) -> Substitute:
    """Name macros only: for when the full macro engine is not part of the build."""
    user = context.persona.name
    char = context.character.name if context.characters else ""
    group = ", ".join(context.group_members) or char

    def substitute(text: str, extra: Mapping[str, str]) -> str:
        values: dict[str, Any] = {
            "char": char,
            "user": user,
            "charifnotgroup": group,
            "group": group,
            "<user>": user,
            "<bot>": char,
        }
        values.update({k.lower(): v for k, v in extra.items()})

        def one(match: re.Match[str]) -> str:
            key = (match.group(1) or match.group(0)).lower()
            value = values.get(key)
            return match.group(0) if value is None else str(value)

        return _NAME_MACRO.sub(one, text)

    return substitute
