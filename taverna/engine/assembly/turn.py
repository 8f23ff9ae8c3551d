"""The part of a turn both APIs share: card fields, the chat as sent, examples, injections.

SillyTavern's `Generate` does these steps before it branches into Chat Completion
or Text Completion (algo-prompt-assembly.md §1 steps 4-18). The builders of both
APIs start from the `Turn` this module prepares.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from taverna.engine.assembly.context import (
    AssemblyContext,
    ChatMessage,
    GenerationType,
    Speaker,
)
from taverna.engine.assembly.injections import (
    QUIET_KEY,
    Injection,
    InjectionTable,
    authors_note_active,
    base_table,
    with_lorebook,
)
from taverna.engine.assembly.recall import recall_injection
from taverna.engine.assembly.regex_scripts import regexed_for_prompt
from taverna.engine.assembly.summary import with_summary
from taverna.engine.assembly.world import (
    LorebookScan,
    ScanRequest,
    WorldInfoOutcome,
    applying_books,
    no_lorebooks,
)
from taverna.engine.lorebook.regex_budget import RegexBudget
from taverna.model.prompt import LedgerItem
from taverna.model.regex_script import RegexPlacement

# Macro substitution: the text and extra macro values ({{original}}, {{lastChatMessage}}).
Substitute = Callable[[str, Mapping[str, str]], str]


@runtime_checkable
class CarriesVariables(Protocol):
    """A `Substitute` that keeps the chat's variables as macros change them (the project's)."""

    @property
    def variables(self) -> Mapping[str, Any]: ...

    def adopt(self, variables: Mapping[str, Any]) -> None: ...


@runtime_checkable
class ReadsCardFields(Protocol):
    """A `Substitute` whose `{{description}}`, `{{scenario}}`... print the fields as read."""

    def use_card_fields(self, fields: CardFields) -> None: ...


_START = re.compile("<START>", re.IGNORECASE)
_NEWLINES = re.compile(r"\n+")


@dataclass(frozen=True, slots=True)
class CardFields:
    """The card and persona texts as they enter the prompt (algo-prompt-assembly.md §2)."""

    description: str = ""
    personality: str = ""
    scenario: str = ""
    mes_examples: str = ""
    system: str = ""
    jailbreak: str = ""
    persona: str = ""


@dataclass(frozen=True, slots=True)
class Turn:
    """What one generation works from, after macros, the lorebook scan and injections.

    `chat` is SillyTavern's `coreChat`: the visible messages, oldest first, with
    the swiped message removed. `example_blocks` are the parsed `<START>` blocks,
    each `heading + block + "\\n"` (lorebook example entries included).
    """

    fields: CardFields
    chat: tuple[ChatMessage, ...]
    example_blocks: tuple[str, ...]
    injections: InjectionTable
    world: WorldInfoOutcome
    authors_note_active: bool
    prompt_budget: int
    substitute: Substitute = field(repr=False, default=lambda text, extra: text)
    dry_run: bool = False
    # The recalled messages considered, with their scores, for the ledger.
    recalled: tuple[LedgerItem, ...] = ()

    def macros(self, text: str, **extra: str) -> str:
        """The text with macros resolved (and any extra macro values)."""
        return self.substitute(text, extra) if text else text


def base_chat_replace(text: str, substitute: Substitute, collapse_newlines: bool) -> str:
    """SillyTavern `baseChatReplace`: macros, optional newline collapsing, no `\\r`."""
    if not text:
        return text
    text = substitute(text, {})
    if collapse_newlines:
        text = _NEWLINES.sub("\n", text)
    return text.replace("\r", "")


def card_fields(context: AssemblyContext, substitute: Substitute) -> CardFields:
    """The card fields, trimmed and macro-processed (SillyTavern `getCharacterCardFields`)."""
    collapse = context.power_user.collapse_newlines
    character = context.character

    def field_text(text: str) -> str:
        return base_chat_replace(text.strip(), substitute, collapse)

    scenario = context.metadata.scenario or character.scenario
    power = context.power_user
    fields = CardFields(
        description=field_text(character.description),
        personality=field_text(character.personality),
        scenario=field_text(scenario),
        mes_examples=field_text(character.mes_example),
        system=field_text(character.system_prompt) if power.prefer_character_prompt else "",
        jailbreak=(
            field_text(character.post_history_instructions)
            if power.prefer_character_jailbreak
            else ""
        ),
        persona=field_text(context.persona.description),
    )
    if context.is_group and context.group_generation_mode in (1, 2):
        fields = replace(fields, **_joined_fields(context, substitute))
    return fields


def _joined_fields(context: AssemblyContext, substitute: Substitute) -> dict[str, str]:
    """Group "join" modes: every member's card fields joined (algo-chat-ops.md §5.3)."""
    collapse = context.power_user.collapse_newlines
    separator = "\n" if context.text_completion.instruct.wrap else ""

    def prepared(value: str, member: str, field_name: str) -> str:
        value = value.strip()
        if not value:
            return ""

        def replace_for(text: str) -> str:
            if not text:
                return ""
            text = re.sub("<FIELDNAME>", field_name, text, flags=re.IGNORECASE)
            return base_chat_replace(
                text.strip(), lambda t, e: substitute(t, {"char": member}), collapse
            )

        prefix = replace_for(context.group_join_prefix)
        suffix = replace_for(context.group_join_suffix)
        body = replace_for(value)
        return (
            (prefix + separator if prefix else "") + body + (separator + suffix if suffix else "")
        )

    members = context.joined_members()
    joined: dict[str, str] = {}
    for key, attribute, label in (
        ("description", "description", "Description"),
        ("personality", "personality", "Personality"),
        ("scenario", "scenario", "Scenario"),
        ("mes_examples", "mes_example", "Example Messages"),
    ):
        parts = [prepared(getattr(m, attribute), m.name, label) for m in members]
        joined[key] = "\n".join(p for p in parts if p)
    if context.metadata.scenario.strip():
        joined["scenario"] = context.metadata.scenario.strip()
    return joined


def core_chat(
    context: AssemblyContext, substitute: Substitute, regexes: RegexBudget | None = None
) -> tuple[ChatMessage, ...]:
    """The messages this generation sends, oldest first (algo-prompt-assembly.md §1 steps 4, 9, 10).

    The regex scripts run within the turn's time for user regexes (`regexes`).
    """
    messages = list(context.messages)
    kind = context.generation_type
    # §1 step 4: regenerate deletes a last message that is not the user's.
    if kind is GenerationType.REGENERATE and messages and not messages[-1].is_user:
        messages.pop()
    # §1 step 9: the greeting is re-macro'd every turn (when the chat's start is given).
    if messages and not context.earlier.count:
        first = messages[0]
        messages[0] = replace(first, text=substitute(first.text, {}))
    chat = [m for m in messages if not m.hidden]
    if kind is GenerationType.SWIPE and chat:
        chat.pop()
    scripts = context.regex_scripts
    if scripts:
        # §1 step 10: prompt regex per message, by its author and depth (0 = newest).
        plain = _plain(substitute)
        count = len(chat)
        for index, message in enumerate(chat):
            placement = RegexPlacement.USER_INPUT if message.is_user else RegexPlacement.AI_OUTPUT
            text = regexed_for_prompt(
                message.text, placement, scripts, plain, count - index - 1, regexes
            )
            if text != message.text:
                chat[index] = replace(message, text=text)
    return tuple(chat)


def _plain(substitute: Substitute) -> Callable[[str], str]:
    return lambda text: substitute(text, {})


def parse_examples(text: str, heading: str) -> list[str]:
    """Example dialogue split into `<START>` blocks (algo-prompt-assembly.md §3.4)."""
    if not text or text == "<START>":
        return []
    if not text.startswith("<START>"):
        text = "<START>\n" + text.strip()
    return [f"{heading}{block.strip()}\n" for block in _START.split(text)[1:]]


def example_heading(context: AssemblyContext, substitute: Substitute) -> str:
    """The heading put before each example block, which depends on the API."""
    if context.api != "textgen":
        return "<START>\n"
    template = context.text_completion.context
    separator = (
        substitute(template.example_separator, {}) + "\n" if template.example_separator else ""
    )
    instruct = context.text_completion.instruct_enabled
    return separator or ("<START>\n" if instruct else "")


def prompt_bias_text(context: AssemblyContext) -> str:
    """The prompt bias before macros (algo-prompt-assembly.md §7.3); none for continue, impersonate.

    The bias stored on the newest user, hidden or narrator message wins over the
    user's default; on a swipe the swiped message is skipped.
    """
    kind = context.generation_type
    if kind in (GenerationType.CONTINUE, GenerationType.IMPERSONATE):
        return ""
    messages = list(context.messages)
    if kind is GenerationType.REGENERATE and messages and not messages[-1].is_user:
        messages.pop()  # §1 step 4: deleted before the bias is read
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if kind is GenerationType.SWIPE and index == len(messages) - 1:
            continue
        if message.is_user or message.hidden or message.speaker is Speaker.NARRATOR:
            if message.bias.strip():
                return message.bias
            break
    return context.power_user.user_prompt_bias


def prompt_budget(context: AssemblyContext) -> int:
    """The tokens the prompt may use: context size minus the reply (§1 step 11)."""
    if context.api == "textgen":
        settings = context.text_completion
        return settings.max_context - settings.amount_gen
    cc = context.chat_completion
    return cc.max_context - cc.max_tokens


def prepare_turn(
    context: AssemblyContext,
    substitute: Substitute,
    scan: LorebookScan = no_lorebooks,
    count_text: Callable[[str], int] = len,
    regexes: RegexBudget | None = None,
) -> Turn:
    """Everything both APIs need before building their prompt.

    `regexes`: the turn's time for user regexes (scripts and lorebook regex keys).
    """
    regexes = regexes if regexes is not None else RegexBudget()
    fields = card_fields(context, substitute)
    if isinstance(substitute, ReadsCardFields):
        # SillyTavern's card macros print the fields getCharacterCardFields returns, their
        # own macros resolved; here they are read once per generation (this read).
        substitute.use_card_fields(fields)
    chat = core_chat(context, substitute, regexes)
    heading = example_heading(context, substitute)
    blocks = parse_examples(fields.mes_examples, heading)

    active = authors_note_active(context)
    table = with_summary(base_table(context, active), context, substitute)
    budget = prompt_budget(context)
    recalled, recall_notes = recall_injection(context, count_text)
    if recalled is not None:
        table = table.with_(recalled)

    # §1 step 16: the quiet prompt is scannable while the lorebook scan runs.
    scannable = table
    if context.quiet_prompt:
        scannable = table.with_(
            Injection(QUIET_KEY, context.quiet_prompt, scan=True, kind="quiet", source="quiet")
        )
    books = applying_books(context)
    world = WorldInfoOutcome()
    # Macros share one set of variables in SillyTavern: the scan starts from what the
    # card fields' macros left, and what its entries set carries on to later texts.
    carrier = substitute if isinstance(substitute, CarriesVariables) else None
    if books:
        world = scan(
            ScanRequest(
                context=context,
                messages=chat,
                # getExtensionPromptByName: scanned prompts are macro-expanded first.
                injected=tuple(substitute(t, {}) for t in scannable.scannable_texts()),
                budget_context=budget,
                books=books,
                count_text=count_text,
                regex=(
                    _world_regex(context, substitute, regexes) if context.regex_scripts else None
                ),
                variables=carrier.variables if carrier is not None else None,
                regexes=regexes,
            )
        )
        if carrier is not None and world.variables is not None:
            carrier.adopt(world.variables)

    # algo-prompt-assembly.md §1 step 17: lorebook example blocks join the card's.
    collapse = context.power_user.collapse_newlines
    for text in world.examples_before:
        parsed = parse_examples(base_chat_replace(text, substitute, collapse), heading)
        blocks = parsed + blocks
    for text in world.examples_after:
        blocks = blocks + parse_examples(base_chat_replace(text, substitute, collapse), heading)

    table = with_lorebook(table, world.depth_groups, world.an_top, world.an_bottom, active)
    return Turn(
        fields=fields,
        chat=chat,
        example_blocks=tuple(blocks),
        injections=table,
        world=world,
        authors_note_active=active,
        prompt_budget=budget,
        substitute=substitute,
        dry_run=context.dry_run,
        recalled=recall_notes,
    )


def _world_regex(
    context: AssemblyContext, substitute: Substitute, regexes: RegexBudget
) -> Callable[[str, int | None], str]:
    """Prompt regex for lorebook contents (placement WORLD_INFO, @depth entries by depth)."""
    plain = _plain(substitute)

    def run(text: str, depth: int | None) -> str:
        return regexed_for_prompt(
            text, RegexPlacement.WORLD_INFO, context.regex_scripts, plain, depth, regexes
        )

    return run


def turn_state(turn: Turn) -> dict[str, Any]:
    """The chat state this turn leaves, to record on its reply: lorebook timers and the
    chat variables after every macro of the prompt, and the global variables when macros
    changed them (none for a dry run)."""
    if turn.dry_run:
        return {}
    state: dict[str, Any] = {}
    if turn.world.timers is not None:
        state["timedWorldInfo"] = dict(turn.world.timers)
    if isinstance(turn.substitute, CarriesVariables):
        state["variables"] = dict(turn.substitute.variables)
        changed = getattr(turn.substitute, "changed_globals", None)
        if changed is not None:
            # `{{setglobalvar}}` and friends: the caller stores these in the library
            # (SillyTavern saves its settings); they do not follow the branch.
            state["globalVariables"] = dict(changed)
    elif turn.world.variables is not None:
        state["variables"] = dict(turn.world.variables)
    return state


def speaker_role(message: ChatMessage) -> str:
    """The chat-completion role of a chat message."""
    if message.speaker is Speaker.NARRATOR:
        return "system"
    return "user" if message.is_user else "assistant"
