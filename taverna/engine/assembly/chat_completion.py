"""Chat Completion assembly: the message list SillyTavern 1.12.6 would send.

The prompt manager's order decides where each part goes; the token budget
decides what fits (algo-prompt-assembly.md §3). Parts are laid out in a sparse
list of collections indexed by their place in the prompt collection, so the final
order is the prompt manager's whatever the order in which they were budgeted.
The slots and their budget are in `chat_layout`, the chat in `chat_history`, the example
dialogue in `chat_examples`, the parts made the messages sent in `chat_messages`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from taverna.engine.assembly.budget import MessageCost
from taverna.engine.assembly.chat_examples import populate_examples
from taverna.engine.assembly.chat_history import ChatHistory, ChatView, populate_history
from taverna.engine.assembly.chat_layout import BudgetExceeded, Layout, Part, Slot
from taverna.engine.assembly.chat_messages import as_message, squash_system, volatile_last
from taverna.engine.assembly.context import AssemblyContext, GenerationType
from taverna.engine.assembly.injections import (
    AUTHORS_NOTE_KEY,
    DATA_BANK_KEY,
    DEPTH_PROMPT_KEY,
    PERSONA_KEY,
    QUIET_KEY,
    SUMMARY_KEY,
    VECTORS_KEY,
    InChatPrompt,
    depth_blocks,
)
from taverna.engine.assembly.stop import custom_stopping_strings
from taverna.engine.assembly.turn import Turn, prompt_bias_text, turn_state
from taverna.engine.tokens.logit_bias import BIAS_SOURCES, logit_bias
from taverna.engine.tokens.selection import chat_completion_tokenizer
from taverna.model.injection import ExtensionPosition, InjectionRole
from taverna.model.lorebook import Position
from taverna.model.persona import PersonaPosition
from taverna.model.prompt import Ledger, LedgerItem, Prompt

ABSOLUTE = 1  # prompt-manager `injection_position` for in-chat prompts
_KNOWN_EXTENSION_KEYS = frozenset(
    {
        SUMMARY_KEY,
        AUTHORS_NOTE_KEY,
        VECTORS_KEY,
        DATA_BANK_KEY,
        "chromadb",
        PERSONA_KEY,
        QUIET_KEY,
        DEPTH_PROMPT_KEY,
    }
)


# Macros whose value changes from turn to turn: a prefix cache breaks where they are.
_VOLATILE_MACRO = re.compile(
    r"\{\{\s*(random|roll|time|date|weekday|isotime|isodate|idle_duration|datetimeformat|time_utc)",
    re.IGNORECASE,
)


def _prompt_role(role: InjectionRole | int) -> str:
    return InjectionRole.parse(int(role)).chat_role


def _side(position: ExtensionPosition) -> str:
    if position is ExtensionPosition.BEFORE_PROMPT:
        return "start"
    if position is ExtensionPosition.IN_PROMPT:
        return "end"
    return ""


def _bias(context: AssemblyContext, turn: Turn) -> str:
    """The prompt bias with its macros replaced."""
    bias = prompt_bias_text(context)
    return turn.macros(bias) if bias else ""


def build_chat_completion(context: AssemblyContext, turn: Turn, cost: MessageCost) -> Prompt:
    """The Chat Completion prompt for this turn, with its ledger."""
    cc = context.chat_completion
    prepare = _preparer(context, turn)
    order = {entry.identifier: entry for entry in cc.order}
    collection = _prompt_collection(context, prepare)
    markers, bias = _marker_slots(context, turn)
    _fill_markers(collection, [*markers, *_extension_slots(context, turn)], prepare)
    _character_overrides(context, turn, collection, prepare)

    layout = Layout(turn.prompt_budget, cost)
    error = ""
    try:
        _populate(context, turn, collection, order, layout, bias, cost)
    except BudgetExceeded as exceeded:
        error = str(exceeded)  # the slot that did not fit

    slot_tokens = _slot_tokens(layout, order)
    parts = [p for _, ps in layout.ordered() for p in ps if p.content]
    if context.layout.volatile_slots_last:
        parts = volatile_last(parts)
    if cc.squash_system_messages:
        parts = squash_system(parts, cost)
    messages = tuple(as_message(p) for p in parts)
    return Prompt(
        kind="chat",
        messages=messages,
        # All of them: each provider applies its own limit (OpenAI 4, Gemini 5, Claude none).
        stop=(*cc.stop, *custom_stopping_strings(context.power_user, turn.macros)),
        prefill=_prefill(context, turn.macros),
        sampling=_sampling(context),
        ledger=replace(_ledger(turn, parts, layout, error, cost), slot_tokens=slot_tokens),
        state=turn_state(turn),
        # SillyTavern's Gemini stop list takes the solo separator, in groups too.
        new_chat_prompt=turn.substitute(cc.new_chat_prompt, {}),
    )


def _slot_tokens(layout: Layout, order: Mapping[str, Any]) -> dict[str, int]:
    """The tokens each slot of the prompt manager's order sent, counted before any merging
    of messages: a part placed in another slot's place (a slot in the chat) is its own."""
    tokens: dict[str, int] = {}
    for place, parts in layout.ordered():
        for part in parts:
            if part.content:
                slot = part.identifier if part.identifier in order else place
                tokens[slot] = tokens.get(slot, 0) + part.tokens
    return tokens


def _sampling(context: AssemblyContext) -> dict[str, Any]:
    """The preset's samplers, with the selected logit-bias preset as token ids (the
    sources SillyTavern sends a bias to)."""
    cc = context.chat_completion
    sampling = dict(cc.sampling)
    chosen = cc.extras.get("logit_bias_preset")
    entries = chosen.get("entries") if isinstance(chosen, Mapping) else None
    if entries and isinstance(entries, list) and cc.source in BIAS_SOURCES:
        family = chat_completion_tokenizer(cc.source, cc.model)
        sampling["logit_bias"] = logit_bias(entries, family)
    return sampling


def _preparer(context: AssemblyContext, turn: Turn) -> Callable[..., str]:
    """SillyTavern's `preparePrompt`: a prompt's macros, with `{{original}}` and `{{group}}`."""
    group_members = ", ".join(context.group_members)

    def prepare(text: str, original: str | None = None) -> str:
        extra: dict[str, str] = {}
        if original is not None:
            extra["original"] = original
        if group_members:
            extra["group"] = group_members
        return turn.substitute(text, extra) if text else ""

    return prepare


def _prompt_collection(context: AssemblyContext, prepare: Callable[..., str]) -> list[Slot]:
    """PromptManager.getPromptCollection: enabled prompts in order; a disabled main stays, empty."""
    cc = context.chat_completion
    collection: list[Slot] = []
    for entry in cc.order:
        defined = cc.slot(entry.identifier)
        if defined is None:
            continue
        if entry.enabled or entry.identifier == "main":
            content = prepare(defined.content) if entry.enabled else ""
            collection.append(
                Slot(
                    defined.identifier,
                    defined.role or "system",
                    content,
                    defined.injection_position,
                    defined.injection_depth,
                    defined.system_prompt,
                    # A custom slot's identifier is a UUID: the ledger names it as the
                    # person did (built-in slots keep their identifier).
                    source=(defined.name or defined.identifier)
                    if not defined.system_prompt and not defined.marker
                    else defined.identifier,
                    volatile=bool(_VOLATILE_MACRO.search(defined.content)),
                )
            )
    return collection


def _index_of(collection: Sequence[Slot], identifier: str) -> int:
    for i, slot in enumerate(collection):
        if slot.identifier == identifier:
            return i
    return -1


def _marker_slots(context: AssemblyContext, turn: Turn) -> tuple[list[Slot], str]:
    """The markers' prompts (lorebook, card, controls, bias), with the prompt bias itself."""
    cc = context.chat_completion
    macros = turn.macros
    fields = turn.fields
    world_before = _format_world(cc.wi_format, turn.world.before)
    world_after = _format_world(cc.wi_format, turn.world.after)
    personality = (
        macros(cc.personality_format) if fields.personality and cc.personality_format else ""
    )
    scenario = macros(cc.scenario_format) if fields.scenario and cc.scenario_format else ""
    bias = _bias(context, turn)
    markers: list[Slot] = [
        Slot("worldInfoBefore", "system", world_before, kind="lorebook", source="before"),
        Slot("worldInfoAfter", "system", world_after, kind="lorebook", source="after"),
        Slot("charDescription", "system", fields.description, kind="card", source="description"),
        Slot("charPersonality", "system", personality, kind="card", source="personality"),
        Slot("scenario", "system", scenario, kind="card", source="scenario"),
        Slot(
            "impersonate",
            "system",
            # Only read when impersonating; skipping it saves a macro pass per turn.
            macros(cc.impersonation_prompt)
            if cc.impersonation_prompt and context.generation_type is GenerationType.IMPERSONATE
            else "",
            kind="control",
        ),
        Slot("quietPrompt", "system", context.quiet_prompt, kind="control"),
        Slot("bias", "system", bias, kind="bias"),
        Slot(
            "groupNudge",
            "system",
            macros(cc.group_nudge_prompt) if context.is_group else "",
            kind="control",
        ),
    ]
    return markers, bias


def _extension_slots(context: AssemblyContext, turn: Turn) -> list[Slot]:
    """The extension prompts around the main prompt: summary, author's note, persona, others."""
    fields = turn.fields
    slots: list[Slot] = []
    table = turn.injections
    for key, identifier in (
        (SUMMARY_KEY, "summary"),
        (AUTHORS_NOTE_KEY, "authorsNote"),
        (VECTORS_KEY, "vectorsMemory"),
        (DATA_BANK_KEY, "vectorsDataBank"),
        ("chromadb", "smartContext"),
    ):
        found = table.get(key)
        if found is not None and found.text:
            role = "system" if key in (VECTORS_KEY, "chromadb") else _prompt_role(found.role)
            slots.append(
                Slot(
                    identifier,
                    role,
                    found.text,
                    side=_side(found.position),
                    kind=found.kind,
                    source=found.source or key,
                )
            )
    persona = context.persona
    if fields.persona and persona.position is PersonaPosition.IN_PROMPT:
        # §3.2: the raw persona text, macros resolved by preparePrompt below.
        slots.append(
            Slot(
                "personaDescription",
                "system",
                persona.description,
                kind="persona",
                source="persona",
            )
        )
    for key, injection in table.entries.items():
        if key in _KNOWN_EXTENSION_KEYS or not injection.text:
            continue
        if injection.position not in (ExtensionPosition.BEFORE_PROMPT, ExtensionPosition.IN_PROMPT):
            continue
        slots.append(
            Slot(
                "".join(c if (c.isalnum() or c == "_") and c.isascii() else "_" for c in key),
                _prompt_role(injection.role),
                injection.text,
                extension=True,
                side=_side(injection.position),
                kind=injection.kind,
                source=injection.source or key,
            )
        )
    return slots


def _fill_markers(
    collection: list[Slot], generated: Sequence[Slot], prepare: Callable[..., str]
) -> None:
    """preparePromptsForChatCompletion: fill the markers, append the unordered prompts."""
    for made in generated:
        at = _index_of(collection, made.identifier)
        if at >= 0:
            existing = collection[at]
            made.injection_position = existing.injection_position
            made.injection_depth = existing.injection_depth
            made.role = existing.role or made.role
        made.content = prepare(made.content)
        if at >= 0:
            collection[at] = made
        else:
            collection.append(made)


def _character_overrides(
    context: AssemblyContext, turn: Turn, collection: list[Slot], prepare: Callable[..., str]
) -> None:
    """Character overrides of the main prompt and post-history instructions (§3.2)."""
    cc = context.chat_completion
    fields = turn.fields
    for identifier, override in (("main", fields.system), ("jailbreak", fields.jailbreak)):
        at = _index_of(collection, identifier)
        preset = cc.slot(identifier)
        if override and at >= 0 and not (preset is not None and preset.forbid_overrides):
            original = collection[at].content
            collection[at].content = prepare(override, original=original)
            collection[at].kind = "card"
            collection[at].source = f"{identifier}:character"


def _prefill(context: AssemblyContext, macros: Callable[[str], str]) -> str:
    """The assistant prefill (Claude): the impersonation one when impersonating, none when quiet."""
    cc = context.chat_completion
    kind = context.generation_type
    if kind is GenerationType.QUIET:
        return ""
    text = (
        cc.assistant_impersonation if kind is GenerationType.IMPERSONATE else cc.assistant_prefill
    )
    return macros(text) if text else ""


def _format_world(template: str, text: str) -> str:
    if not text:
        return ""
    if not template.strip():
        return text
    # SillyTavern `stringFormat`: `{0}` is replaced by the text.
    return template.replace("{0}", text)


def _populate(
    context: AssemblyContext,
    turn: Turn,
    collection: list[Slot],
    order: Mapping[str, Any],
    layout: Layout,
    bias: str,
    cost: MessageCost,
) -> None:
    """SillyTavern `populateChatCompletion` (algo-prompt-assembly.md §3.3)."""
    by_id = {slot.identifier: (i, slot) for i, slot in enumerate(collection)}
    layout.budget -= 3  # §3.3 step 1: every reply is primed with the assistant header
    for identifier in _SYSTEM_SLOTS:
        _add_slot(identifier, by_id, order, layout)

    controls = _control_prompts(context, by_id, layout)
    reserved = sum(p.tokens for p in controls)
    layout.budget -= reserved

    user_relative = [
        s.identifier for s in collection if not s.system_prompt and s.injection_position != ABSOLUTE
    ]
    for identifier in ("nsfw", "jailbreak", *user_relative):
        _add_slot(identifier, by_id, order, layout)
    if "enhanceDefinitions" in by_id:
        _add_slot("enhanceDefinitions", by_id, order, layout)
    if bias and bias.strip():
        _add_slot("bias", by_id, order, layout)
    _insert_beside_main(collection, by_id, layout)

    history = _history(context, turn, collection, cost)
    if context.power_user.pin_examples:
        populate_examples(context, turn, by_id, layout)
        populate_history(context, turn, history, by_id, layout)
    else:
        populate_history(context, turn, history, by_id, layout)
        populate_examples(context, turn, by_id, layout)

    layout.budget += reserved
    if controls:
        layout.add("controlPrompts", controls, None)


# §3.3 step 2: the system prompts budgeted first, in this order.
_SYSTEM_SLOTS = (
    "worldInfoBefore",
    "main",
    "worldInfoAfter",
    "charDescription",
    "charPersonality",
    "scenario",
    "personaDescription",
)
# Extension prompts that stand before or after the main prompt when they have a side.
_SIDE_SLOTS = ("summary", "authorsNote", "vectorsMemory", "vectorsDataBank", "smartContext")


def _add_slot(
    identifier: str,
    by_id: Mapping[str, tuple[int, Slot]],
    order: Mapping[str, Any],
    layout: Layout,
) -> None:
    """Budget one prompt-manager slot in its place, unless disabled or in-chat."""
    found = by_id.get(identifier)
    if found is None:
        return
    entry = order.get(identifier)
    if entry is not None and not entry.enabled and identifier != "main":
        return
    index, slot = found
    if slot.injection_position == ABSOLUTE:
        return
    part = layout.part(identifier, slot.role, slot.content, kind=slot.kind, source=slot.source)
    part.volatile = slot.kind == "lorebook" or slot.volatile
    layout.add(identifier, [part], index)


def _control_prompts(
    context: AssemblyContext, by_id: Mapping[str, tuple[int, Slot]], layout: Layout
) -> list[Part]:
    """The impersonation and quiet prompts, whose tokens are reserved until the end."""
    controls: list[Part] = []
    if context.generation_type is GenerationType.IMPERSONATE and "impersonate" in by_id:
        slot = by_id["impersonate"][1]
        controls.append(layout.part("impersonate", slot.role, slot.content, kind="control"))
    if "quietPrompt" in by_id and by_id["quietPrompt"][1].content:
        slot = by_id["quietPrompt"][1]
        controls.append(layout.part("quietPrompt", slot.role, slot.content, kind="control"))
    return controls


def _insert_beside_main(
    collection: list[Slot], by_id: Mapping[str, tuple[int, Slot]], layout: Layout
) -> None:
    """Extension prompts with a side go before or after the main prompt (§3.3 step 5)."""
    for identifier in _SIDE_SLOTS:
        if identifier in by_id:
            slot = by_id[identifier][1]
            if slot.side:
                part = layout.part(
                    identifier, slot.role, slot.content, kind=slot.kind, source=slot.source
                )
                layout.insert(part, "main", slot.side)
    for slot in collection:
        if slot.extension and slot.side:
            part = layout.part(
                slot.identifier, slot.role, slot.content, kind=slot.kind, source=slot.source
            )
            layout.insert(part, "main", slot.side)


def _history(
    context: AssemblyContext, turn: Turn, collection: list[Slot], cost: MessageCost
) -> ChatHistory:
    """The chat with the in-chat injections placed at their depths (§3.3 step 6)."""
    in_chat = [
        InChatPrompt(
            s.identifier, InjectionRole.parse(s.role), s.injection_depth, s.content, s.source
        )
        for s in collection
        if s.injection_position == ABSOLUTE
    ]
    blocks = depth_blocks(turn.injections, lambda t: turn.substitute(t, {}), in_chat, True)
    return ChatHistory(ChatView(context, turn, cost), blocks)


def _ledger(
    turn: Turn, parts: Sequence[Part], layout: Layout, error: str, cost: MessageCost
) -> Ledger:
    items = [LedgerItem("overhead", "", 3, True, code="reply_primed", source_code="reply_priming")]
    for position, part in enumerate(parts):
        items.append(
            LedgerItem(
                part.kind,
                part.source or part.identifier,
                part.tokens,
                True,
                "",
                part.content,
                position,
                source_code=part.source_code,
                source_params=part.source_params or {},
            )
        )
    for part, reason in layout.dropped:
        items.append(
            LedgerItem(
                part.kind,
                part.source or part.identifier,
                part.tokens,
                False,
                text=part.content,
                code=reason,
                source_code=part.source_code,
                source_params=part.source_params or {},
            )
        )
    if error:
        items.append(
            LedgerItem("error", "budget", 0, False, code="budget_exceeded", params={"at": error})
        )
    for entry in turn.world.entries:
        # where it went: the position's name, and an @depth entry's depth
        place = entry.position.name.lower() if entry.position is not None else "none"
        if entry.position is Position.AT_DEPTH and entry.entry.depth is not None:
            place += f"@{entry.entry.depth}"
        # counted as the scan counted it for its budget: one full system message
        tokens = cost.text(entry.content)
        items.append(
            LedgerItem(
                "lorebook_entry",
                f"{entry.book}/{entry.uid}",
                tokens,
                True,
                text=entry.content,
                code="placed",
                params={"place": place},
            )
        )
    total = 3 + sum(p.tokens for p in parts)
    stopped = layout.history_stopped or bool(error)
    return Ledger(
        tuple(items),
        total,
        turn.prompt_budget,
        turn.world.trace,
        stopped,
        scanned_books=turn.world.books,
    )
