"""Chat Completion assembly: the message list SillyTavern 1.12.6 would send.

The prompt manager's order decides where each part goes; the token budget
decides what fits (algo-prompt-assembly.md §3). Parts are laid out in a sparse
list of collections indexed by their place in the prompt collection, so the final
order is the prompt manager's whatever the order in which they were budgeted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from taverna.engine.assembly.budget import MessageCost
from taverna.engine.assembly.context import (
    AssemblyContext,
    ExtensionPosition,
    GenerationType,
    InjectionRole,
    NamesBehavior,
    PersonaPosition,
    Speaker,
)
from taverna.engine.assembly.injections import (
    AUTHORS_NOTE_KEY,
    DATA_BANK_KEY,
    DEPTH_PROMPT_KEY,
    PERSONA_KEY,
    QUIET_KEY,
    SUMMARY_KEY,
    VECTORS_KEY,
    InChatPrompt,
    InjectedBlock,
    Injection,
    depth_blocks,
    newest_first,
)
from taverna.engine.assembly.turn import Turn, prompt_bias_text, speaker_role, turn_state
from taverna.engine.macros import has_macros
from taverna.engine.textgen.stop import custom_stopping_strings
from taverna.model.prompt import Ledger, LedgerItem, Prompt, PromptMessage, Role

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
_ROLES = {role.value: role for role in Role}
_NEVER_SQUASHED = frozenset({"newMainChat", "newChat", "groupNudge"})


class BudgetExceeded(Exception):
    """A part that must go in does not fit: SillyTavern stops assembling there (§3.3 step 2)."""


@dataclass(slots=True)
class _Slot:
    """A prompt of the prompt collection, after markers are filled."""

    identifier: str
    role: str
    content: str
    injection_position: int = 0
    injection_depth: int = 4
    system_prompt: bool = True
    extension: bool = False
    side: str = ""  # "start" / "end" for relative extension prompts
    kind: str = "slot"
    source: str = ""
    volatile: bool = False


# Macros whose value changes from turn to turn: a prefix cache breaks where they are.
_VOLATILE_MACRO = re.compile(
    r"\{\{\s*(random|roll|time|date|weekday|isotime|isodate|idle_duration|datetimeformat|time_utc)",
    re.IGNORECASE,
)


@dataclass(slots=True)
class _Part:
    """One message being budgeted, with its ledger identity."""

    identifier: str
    role: str
    content: str
    tokens: int
    name: str = ""
    kind: str = "slot"
    source: str = ""
    volatile: bool = False
    message: PromptMessage | None = None  # built once for a part kept across turns


@dataclass(slots=True)
class _Layout:
    """SillyTavern's `ChatCompletion`: a sparse list of collections and the budget left."""

    budget: int
    cost: MessageCost
    collections: dict[int, tuple[str, list[_Part]]] = field(default_factory=dict)
    dropped: list[tuple[_Part, str]] = field(default_factory=list)
    history_stopped: bool = False  # see Ledger.history_stopped

    def part(self, identifier: str, role: str, content: str, name: str = "", **kw: Any) -> _Part:
        tokens = self.cost.message(role, content, name)
        return _Part(identifier, role, content, tokens, name, **kw)

    def affordable(self, part: _Part) -> bool:
        return self.budget - part.tokens >= 0

    def _check(self, part: _Part) -> None:
        if not self.affordable(part):
            self.dropped.append((part, "budget: a required part does not fit"))
            raise BudgetExceeded(part.identifier)

    def add(self, identifier: str, parts: list[_Part], index: int | None) -> None:
        tokens = sum(p.tokens for p in parts)
        if self.budget - tokens < 0:
            for p in parts:
                self.dropped.append((p, "budget: a required part does not fit"))
            raise BudgetExceeded(identifier)
        if index is None or index == -1:
            index = max(self.collections) + 1 if self.collections else 0
        self.collections[index] = (identifier, parts)
        self.budget -= tokens

    def find(self, identifier: str) -> list[_Part] | None:
        for ident, parts in self.collections.values():
            if ident == identifier:
                return parts
        return None

    def insert(self, part: _Part, identifier: str, where: str = "end") -> None:
        self._check(part)
        target = self.find(identifier)
        if target is None or not part.content:
            return
        if where == "start":
            target.insert(0, part)
        else:
            target.append(part)
        self.budget -= part.tokens

    def ordered(self) -> list[tuple[str, list[_Part]]]:
        return [self.collections[i] for i in sorted(self.collections)]


def _prompt_role(role: InjectionRole | int) -> str:
    return InjectionRole.parse(int(role)).chat_role


def _side(position: ExtensionPosition) -> str:
    if position is ExtensionPosition.BEFORE_PROMPT:
        return "start"
    if position is ExtensionPosition.IN_PROMPT:
        return "end"
    return ""


def _sanitize_name(name: str) -> str:
    """A name the OpenAI `name` field accepts (algo-prompt-assembly.md §3.5).

    JavaScript replaces per UTF-16 code unit, so a character outside the BMP becomes
    two underscores; the result is cut at 64 units.
    """
    out: list[str] = []
    for c in name:
        if c.isascii() and (c.isalnum() or c == "_"):
            out.append(c)
        else:
            out.append("__" if ord(c) > 0xFFFF else "_")
    return "".join(out)[:64]


@dataclass(slots=True)
class _ChatEntry:
    role: str
    content: str
    name: str
    message_id: str = ""
    injected: InjectedBlock | None = None


class _ChatView(Sequence[_ChatEntry]):
    """SillyTavern `setOpenAIMessages`, lazily: chat messages with the names behaviour applied.

    Converted on access, so a long chat costs only the messages the budget reaches.
    """

    def __init__(self, context: AssemblyContext, turn: Turn, cost: MessageCost) -> None:
        self.context = context
        self.turn = turn
        self.chat = turn.chat
        cc = context.chat_completion
        self.names = cc.names_behavior
        self.quotes = cc.wrap_in_quotes
        self.user_name = context.persona.name
        self.group = context.is_group
        self.memo = cost.memo
        self.settings = (self.names, self.quotes, self.user_name, self.group)

    def part(self, index: int, layout: _Layout) -> _Part:
        """The budgeted part of one chat message; unchanged messages come from the memo."""
        message = self.chat[index]
        found = self.memo.get(id(message))
        if found is not None and found[0] is message and found[1] == self.settings:
            part: _Part = found[2]
            return part
        part = _history_part(layout, self[index], self.context, self.turn)
        if not has_macros(message.text):
            # Text without macros gives the same part every turn; keep it with its message.
            self.memo[id(message)] = (message, self.settings, part)
        return part

    def __len__(self) -> int:
        return len(self.chat)

    @overload
    def __getitem__(self, index: int) -> _ChatEntry: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[_ChatEntry]: ...
    def __getitem__(self, index: int | slice) -> _ChatEntry | Sequence[_ChatEntry]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        message = self.chat[index]
        role = speaker_role(message)
        content = message.text
        narrator = message.speaker is Speaker.NARRATOR
        if self.names is NamesBehavior.DEFAULT:
            if (self.group and message.name != self.user_name) or (
                message.forced_avatar and message.name != self.user_name and not narrator
            ):
                content = f"{message.name}: {content}"
        elif self.names is NamesBehavior.CONTENT and not narrator:
            content = f"{message.name}: {content}"
        if "\r" in content:
            content = content.replace("\r", "")
        if role == "user" and self.quotes:
            content = f'"{content}"'
        return _ChatEntry(role, content, message.name, message.id)


def _examples(context: AssemblyContext, turn: Turn) -> list[list[tuple[str, str]]]:
    """Example blocks as (name, content) turns (algo-prompt-assembly.md §3.4)."""
    if context.power_user.strip_examples:
        return []  # script.js: "strip examples" empties them once the story string is built
    user, char = context.persona.name, context.character.name
    blocks: list[list[tuple[str, str]]] = []
    for block in turn.example_blocks:
        text = _replace_first_ci(block, "<START>", "{Example Dialogue:}").replace("\r", "")
        lines = text.split("\n")
        turns: list[tuple[str, str]] = []
        current: list[str] = []
        in_user = in_bot = False

        def flush(name: str, label: str, turns: list[tuple[str, str]], current: list[str]) -> None:
            content = "\n".join(current).replace(name + ":", "", 1).strip()
            if context.is_group:
                content = f"{name}: {content}"
            turns.append((label, content))
            current.clear()

        # §3.4: the first line is the heading and is skipped.
        for line in lines[1:]:
            if line.startswith(user + ":"):
                if in_bot:
                    flush(char, "example_assistant", turns, current)
                in_user, in_bot = True, False
            elif line.startswith(char + ":"):
                if in_user:
                    flush(user, "example_user", turns, current)
                in_user, in_bot = False, True
            current.append(line)
        if in_user:
            flush(user, "example_user", turns, current)
        elif in_bot:
            flush(char, "example_assistant", turns, current)
        blocks.append(turns)
    return blocks


def _replace_first_ci(text: str, needle: str, replacement: str) -> str:
    index = text.lower().find(needle.lower())
    if index < 0:
        return text
    return text[:index] + replacement + text[index + len(needle) :]


def _bias(context: AssemblyContext, turn: Turn) -> str:
    """The prompt bias with its macros replaced."""
    bias = prompt_bias_text(context)
    return turn.macros(bias) if bias else ""


def build_chat_completion(context: AssemblyContext, turn: Turn, cost: MessageCost) -> Prompt:
    """The Chat Completion prompt for this turn, with its ledger."""
    cc = context.chat_completion
    macros = turn.macros
    group_members = ", ".join(context.group_members)
    fields = turn.fields

    def prepare(text: str, original: str | None = None) -> str:
        extra: dict[str, str] = {}
        if original is not None:
            extra["original"] = original
        if group_members:
            extra["group"] = group_members
        return turn.substitute(text, extra) if text else ""

    order = {entry.identifier: entry for entry in cc.order}

    # PromptManager.getPromptCollection: enabled prompts in order; a disabled main stays, empty.
    collection: list[_Slot] = []
    for entry in cc.order:
        defined = cc.slot(entry.identifier)
        if defined is None:
            continue
        if entry.enabled or entry.identifier == "main":
            content = prepare(defined.content) if entry.enabled else ""
            collection.append(
                _Slot(
                    defined.identifier,
                    defined.role or "system",
                    content,
                    defined.injection_position,
                    defined.injection_depth,
                    defined.system_prompt,
                    source=defined.identifier,
                    volatile=bool(_VOLATILE_MACRO.search(defined.content)),
                )
            )

    def index_of(identifier: str) -> int:
        for i, slot in enumerate(collection):
            if slot.identifier == identifier:
                return i
        return -1

    # preparePromptsForChatCompletion: fill the markers, append the unordered prompts.
    world_before = _format_world(cc.wi_format, turn.world.before)
    world_after = _format_world(cc.wi_format, turn.world.after)
    personality = (
        macros(cc.personality_format) if fields.personality and cc.personality_format else ""
    )
    scenario = macros(cc.scenario_format) if fields.scenario and cc.scenario_format else ""
    bias = _bias(context, turn)
    generated: list[_Slot] = [
        _Slot("worldInfoBefore", "system", world_before, kind="lorebook", source="before"),
        _Slot("worldInfoAfter", "system", world_after, kind="lorebook", source="after"),
        _Slot("charDescription", "system", fields.description, kind="card", source="description"),
        _Slot("charPersonality", "system", personality, kind="card", source="personality"),
        _Slot("scenario", "system", scenario, kind="card", source="scenario"),
        _Slot(
            "impersonate",
            "system",
            # Only read when impersonating; skipping it saves a macro pass per turn.
            macros(cc.impersonation_prompt)
            if cc.impersonation_prompt and context.generation_type is GenerationType.IMPERSONATE
            else "",
            kind="control",
        ),
        _Slot("quietPrompt", "system", context.quiet_prompt, kind="control"),
        _Slot("bias", "system", bias, kind="bias"),
        _Slot(
            "groupNudge",
            "system",
            macros(cc.group_nudge_prompt) if context.is_group else "",
            kind="control",
        ),
    ]
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
            generated.append(
                _Slot(
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
        generated.append(
            _Slot(
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
        generated.append(
            _Slot(
                "".join(c if (c.isalnum() or c == "_") and c.isascii() else "_" for c in key),
                _prompt_role(injection.role),
                injection.text,
                extension=True,
                side=_side(injection.position),
                kind=injection.kind,
                source=injection.source or key,
            )
        )
    for made in generated:
        at = index_of(made.identifier)
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

    # Character overrides of the main prompt and post-history instructions (§3.2).
    for identifier, override in (("main", fields.system), ("jailbreak", fields.jailbreak)):
        at = index_of(identifier)
        preset = cc.slot(identifier)
        if override and at >= 0 and not (preset is not None and preset.forbid_overrides):
            original = collection[at].content
            collection[at].content = prepare(override, original=original)
            collection[at].kind = "card"
            collection[at].source = f"{identifier}:character"

    layout = _Layout(turn.prompt_budget, cost)
    error = ""
    try:
        _populate(context, turn, collection, order, layout, bias, cost)
    except BudgetExceeded as exceeded:
        error = f"token budget exceeded at {exceeded}"

    parts = [p for _, ps in layout.ordered() for p in ps if p.content]
    if context.cache_friendly:
        parts = _volatile_last(parts)
    if cc.squash_system_messages:
        parts = _squash(parts, cost)
    messages = tuple(_message(p) for p in parts)
    return Prompt(
        kind="chat",
        messages=messages,
        # All of them: each provider applies its own limit (OpenAI 4, Gemini 5, Claude none).
        stop=(*cc.stop, *custom_stopping_strings(context.power_user, macros)),
        prefill=_prefill(context, macros),
        sampling=dict(cc.sampling),
        ledger=_ledger(turn, parts, layout, error),
        state=turn_state(turn),
    )


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


def _message(part: _Part) -> PromptMessage:
    if part.message is None:
        part.message = PromptMessage(
            _ROLES[part.role], part.content, part.name or None, source=part.identifier
        )
    return part.message


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
    collection: list[_Slot],
    order: Mapping[str, Any],
    layout: _Layout,
    bias: str,
    cost: MessageCost,
) -> None:
    """SillyTavern `populateChatCompletion` (algo-prompt-assembly.md §3.3)."""
    kind = context.generation_type
    by_id = {slot.identifier: (i, slot) for i, slot in enumerate(collection)}

    def add(identifier: str) -> None:
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

    layout.budget -= 3  # §3.3 step 1: every reply is primed with the assistant header
    for identifier in (
        "worldInfoBefore",
        "main",
        "worldInfoAfter",
        "charDescription",
        "charPersonality",
        "scenario",
        "personaDescription",
    ):
        add(identifier)

    controls: list[_Part] = []
    if kind is GenerationType.IMPERSONATE and "impersonate" in by_id:
        slot = by_id["impersonate"][1]
        controls.append(layout.part("impersonate", slot.role, slot.content, kind="control"))
    if "quietPrompt" in by_id and by_id["quietPrompt"][1].content:
        slot = by_id["quietPrompt"][1]
        controls.append(layout.part("quietPrompt", slot.role, slot.content, kind="control"))
    reserved = sum(p.tokens for p in controls)
    layout.budget -= reserved

    user_relative = [
        s.identifier for s in collection if not s.system_prompt and s.injection_position != ABSOLUTE
    ]
    absolute = [s for s in collection if s.injection_position == ABSOLUTE]
    for identifier in ("nsfw", "jailbreak", *user_relative):
        add(identifier)
    if "enhanceDefinitions" in by_id:
        add("enhanceDefinitions")
    if bias and bias.strip():
        add("bias")

    for identifier in (
        "summary",
        "authorsNote",
        "vectorsMemory",
        "vectorsDataBank",
        "smartContext",
    ):
        if identifier in by_id:
            slot = by_id[identifier][1]
            if slot.side:
                layout.insert(
                    layout.part(
                        identifier, slot.role, slot.content, kind=slot.kind, source=slot.source
                    ),
                    "main",
                    slot.side,
                )
    for slot in collection:
        if slot.extension and slot.side:
            layout.insert(
                layout.part(
                    slot.identifier, slot.role, slot.content, kind=slot.kind, source=slot.source
                ),
                "main",
                slot.side,
            )

    # §3.3 step 6: in-chat injections go into the history.
    in_chat = [
        InChatPrompt(s.identifier, InjectionRole.parse(s.role), s.injection_depth, s.content)
        for s in absolute
    ]
    blocks = depth_blocks(turn.injections, lambda t: turn.substitute(t, {}), in_chat, True)
    history = _History(_ChatView(context, turn, cost), blocks)

    if context.power_user.pin_examples:
        _populate_examples(context, turn, by_id, layout)
        _populate_history(context, turn, history, by_id, layout)
    else:
        _populate_history(context, turn, history, by_id, layout)
        _populate_examples(context, turn, by_id, layout)

    layout.budget += reserved
    if controls:
        layout.add("controlPrompts", controls, None)


@dataclass(frozen=True, slots=True)
class _History:
    """The chat with its in-chat injections, read newest first (§3.3 step 6).

    Chat messages come as their index in the chat, injections as entries.
    """

    chat: _ChatView
    blocks: Sequence[InjectedBlock]

    def __len__(self) -> int:
        return len(self.chat) + len(self.blocks)

    def newest_first(self) -> Iterator[int | _ChatEntry]:
        return newest_first(
            range(len(self.chat)),
            self.blocks,
            lambda b: _ChatEntry(b.role.chat_role, b.text, "", injected=b),
        )

    def newest_role(self) -> str | None:
        item = next(self.newest_first(), None)
        if item is None:
            return None
        return item.role if isinstance(item, _ChatEntry) else self.chat[item].role


def _populate_history(
    context: AssemblyContext,
    turn: Turn,
    history: _History,
    by_id: Mapping[str, tuple[int, _Slot]],
    layout: _Layout,
) -> None:
    """SillyTavern `populateChatHistory` (algo-prompt-assembly.md §3.5)."""
    if "chatHistory" not in by_id:
        layout.history_stopped = True  # no message is ever sent
        if len(history):
            layout.dropped.append(
                (
                    _Part(
                        "chatHistory",
                        "user",
                        "",
                        0,
                        kind="history",
                        source=f"{len(history)} messages",
                    ),
                    "no chatHistory slot in the order",
                )
            )
        return
    cc = context.chat_completion
    kind = context.generation_type
    container: list[_Part] = []
    layout.add("chatHistory", container, by_id["chatHistory"][0])

    new_chat = cc.new_group_chat_prompt if context.is_group else cc.new_chat_prompt
    group = {"group": ", ".join(context.group_members)} if context.is_group else {}
    new_chat_part = layout.part(
        "newMainChat",
        "system",
        turn.substitute(new_chat, group) if new_chat else "",
        kind="separator",
    )
    layout.budget -= new_chat_part.tokens

    nudge: _Part | None = None
    if context.is_group and "groupNudge" in by_id and kind is not GenerationType.IMPERSONATE:
        slot = by_id["groupNudge"][1]
        nudge = layout.part("groupNudge", slot.role, slot.content, kind="control")
        layout.budget -= nudge.tokens

    continue_part: _Part | None = None
    last_text = turn.chat[-1].text if turn.chat else ""
    if kind is GenerationType.CONTINUE and turn.chat and not cc.continue_prefill:
        # Script.js adds the continue postfix before the nudge reads the text; trim drops it.
        cycle = last_text if last_text.endswith(" ") else last_text + cc.continue_postfix
        text = turn.substitute(cc.continue_nudge_prompt, {"lastChatMessage": cycle.strip()})
        text = turn.substitute(text, {})
        continue_part = layout.part("continueNudge", "system", text, kind="control")
        layout.budget -= continue_part.tokens

    if history.newest_role() == "assistant" and cc.send_if_empty:
        empty = layout.part("emptyUserMessageReplacement", "user", cc.send_if_empty, kind="control")
        if layout.affordable(empty):
            layout.insert(empty, "chatHistory")

    seen_real = False
    total = len(history)
    newest_parts: list[_Part] = []
    for position, entry in enumerate(history.newest_first()):
        real = isinstance(entry, int)
        is_first_real = real and not seen_real
        seen_real = seen_real or real
        if isinstance(entry, int):
            part = history.chat.part(entry, layout)
        else:
            part = _history_part(layout, entry, context, turn)
        if not layout.affordable(part):
            layout.dropped.append(
                (part, "budget: history is filled newest to oldest; this message did not fit")
            )
            layout.history_stopped = True
            # Messages the caller left out (a long chat given by its end) are older too.
            older = total - position - 1 + context.earlier.visible
            if older:
                layout.dropped.append(
                    (
                        _Part(
                            "chatHistory:older",
                            "user",
                            "",
                            0,
                            kind="history",
                            source=f"{older} older messages",
                        ),
                        "budget: history is filled newest to oldest and stops at the first message that does not fit",
                    )
                )
            break
        if kind is GenerationType.CONTINUE and cc.continue_prefill and is_first_real:
            layout.add("continuePrefill", [part], None)
            continue
        if part.content:
            # Same as inserting each at the start, newest first; reversed once below.
            newest_parts.append(part)
            layout.budget -= part.tokens
    container[:0] = reversed(newest_parts)

    layout.budget += new_chat_part.tokens
    layout.insert(new_chat_part, "chatHistory", "start")
    if nudge is not None:
        layout.budget += nudge.tokens
        layout.insert(nudge, "chatHistory", "end")
    if continue_part is not None:
        layout.budget += continue_part.tokens
        layout.insert(continue_part, "chatHistory", "end")


def _history_part(
    layout: _Layout, entry: _ChatEntry, context: AssemblyContext, turn: Turn
) -> _Part:
    # §3.5 step 7: macros in stored chat text are live in Chat Completion.
    content = turn.substitute(entry.content, {}) if entry.content else ""
    name = ""
    if (
        entry.injected is None
        and context.chat_completion.names_behavior is NamesBehavior.COMPLETION
        and entry.name
    ):
        name = _sanitize_name(entry.name)
    if entry.injected is not None:
        block = entry.injected
        sources = ",".join(
            s.source or s.key if isinstance(s, Injection) else s.identifier for s in block.sources
        )
        return layout.part(
            f"injection@{block.depth}:{block.role.chat_role}",
            entry.role,
            content,
            kind="injection",
            source=f"depth {block.depth} {block.role.chat_role}: {sources}",
            volatile=True,
        )
    return layout.part(
        f"chatHistory:{entry.message_id}",
        entry.role,
        content,
        name,
        kind="history",
        source=entry.message_id,
    )


def _populate_examples(
    context: AssemblyContext,
    turn: Turn,
    by_id: Mapping[str, tuple[int, _Slot]],
    layout: _Layout,
) -> None:
    """SillyTavern `populateDialogueExamples` (algo-prompt-assembly.md §3.6)."""
    blocks = _examples(context, turn)
    if "dialogueExamples" not in by_id:
        return
    container: list[_Part] = []
    layout.add("dialogueExamples", container, by_id["dialogueExamples"][0])
    if not blocks:
        return
    cc = context.chat_completion
    separator_text = (
        turn.substitute(cc.new_example_chat_prompt, {}) if cc.new_example_chat_prompt else ""
    )
    for number, block in enumerate(blocks):
        added = 0
        separator = layout.part("newChat", "system", separator_text, kind="separator")
        if layout.affordable(separator):
            layout.insert(separator, "dialogueExamples")
        for position, (name, content) in enumerate(block):
            part = layout.part(
                f"dialogueExamples {number}-{position}",
                "system",
                content,
                name,
                kind="example",
                source=f"block {number} turn {position}",
            )
            if not layout.affordable(part):
                for rest in block[position:]:
                    layout.dropped.append(
                        (
                            layout.part("example", "system", rest[1], rest[0], kind="example"),
                            "budget: examples take what is left after the history",
                        )
                    )
                break
            layout.insert(part, "dialogueExamples")
            added += 1
        if added == 0 and container:
            # §3.6: SillyTavern pops the last message of the examples, whatever it is.
            removed = container.pop()
            layout.budget += removed.tokens


def _volatile_last(parts: list[_Part]) -> list[_Part]:
    """Cache-friendly layout: lorebook text and depth injections after the stable prefix.

    They move, in their order, to just after the newest chat message, so that the
    prefix a provider caches stays the same while they change from turn to turn.
    """
    volatile = [p for p in parts if p.volatile]
    if not volatile:
        return parts
    stable = [p for p in parts if not p.volatile]
    last_history = max(
        (i for i, p in enumerate(stable) if p.kind in ("history", "separator")),
        default=len(stable) - 1,
    )
    merged = "\n".join(p.content for p in volatile)
    moved = _Part(
        "volatile",
        "system",
        merged,
        sum(p.tokens for p in volatile),
        kind="volatile",
        source=",".join(p.identifier for p in volatile),
    )
    return [*stable[: last_history + 1], moved, *stable[last_history + 1 :]]


def _squash(parts: list[_Part], cost: MessageCost) -> list[_Part]:
    """Consecutive unnamed system messages merged (algo-prompt-assembly.md §3.3 step 9)."""
    out: list[_Part] = []

    def squashable(part: _Part) -> bool:
        return part.identifier not in _NEVER_SQUASHED and part.role == "system" and not part.name

    for part in parts:
        if part.role == "system" and not part.content:
            continue
        if squashable(part) and out and squashable(out[-1]):
            last = out[-1]
            content = last.content + "\n" + part.content
            out[-1] = _Part(
                last.identifier,
                last.role,
                content,
                cost.message(last.role, content),
                kind=last.kind,
                source=f"{last.source}+{part.source}",
            )
        else:
            out.append(part)
    return out


def _ledger(turn: Turn, parts: Sequence[_Part], layout: _Layout, error: str) -> Ledger:
    items = [LedgerItem("overhead", "reply priming", 3, True, "every reply is primed", "")]
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
            )
        )
    for part, reason in layout.dropped:
        items.append(
            LedgerItem(
                part.kind, part.source or part.identifier, part.tokens, False, reason, part.content
            )
        )
    if error:
        items.append(LedgerItem("error", "budget", 0, False, error, ""))
    for entry in turn.world.entries:
        items.append(
            LedgerItem(
                "lorebook_entry",
                f"{entry.book}/{entry.uid}",
                entry.tokens,
                True,
                f"{entry.position}" + (f"@{entry.depth}" if entry.depth is not None else ""),
                entry.text,
            )
        )
    total = 3 + sum(p.tokens for p in parts)
    stopped = layout.history_stopped or bool(error)
    return Ledger(tuple(items), total, turn.prompt_budget, turn.world.trace, stopped)
