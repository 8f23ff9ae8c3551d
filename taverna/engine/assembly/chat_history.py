"""The chat in a Chat Completion prompt: messages as sent, injections, history fitted (§3.5)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import overload

from taverna.engine.assembly.budget import MessageCost
from taverna.engine.assembly.chat_layout import Layout, Part, Slot
from taverna.engine.assembly.context import AssemblyContext, GenerationType, Speaker
from taverna.engine.assembly.images import image_tokens
from taverna.engine.assembly.injections import InjectedBlock, Injection, newest_first
from taverna.engine.assembly.summary import depth_source, summary_of
from taverna.engine.assembly.turn import Turn, speaker_role
from taverna.engine.macros import has_macros
from taverna.model.presets import NamesBehavior
from taverna.model.prompt import PromptImage


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
class ChatEntry:
    """A chat message as a Chat Completion message, or an injection placed among them."""

    role: str
    content: str
    name: str
    message_id: str = ""
    injected: InjectedBlock | None = None
    image: PromptImage | None = None


class ChatView(Sequence[ChatEntry]):
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
        self.images = context.inline_images
        self.image_detail = cc.inline_image_quality
        self.settings = (
            self.names,
            self.quotes,
            self.user_name,
            self.group,
            self.images,
            self.image_detail,
        )

    def part(self, index: int, layout: Layout) -> Part:
        """The budgeted part of one chat message; unchanged messages come from the memo."""
        message = self.chat[index]
        # Keyed by the message's id (a string the message holds anyway): an edited
        # message's new object takes its old one's entry, checked by identity.
        found = self.memo.get(message.id)
        if found is not None and found[0] is message and found[1] == self.settings:
            part: Part = found[2]
            return part
        part = _history_part(layout, self[index], self.context, self.turn)
        if not has_macros(message.text):
            # Text without macros gives the same part every turn; keep it with its message.
            self.memo[message.id] = (message, self.settings, part)
        return part

    def __len__(self) -> int:
        return len(self.chat)

    @overload
    def __getitem__(self, index: int) -> ChatEntry: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[ChatEntry]: ...
    def __getitem__(self, index: int | slice) -> ChatEntry | Sequence[ChatEntry]:
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
        image = message.image if self.images else None
        if image is not None and image.detail != self.image_detail:
            image = replace(image, detail=self.image_detail)
        return ChatEntry(role, content, message.name, message.id, image=image)


@dataclass(frozen=True, slots=True)
class ChatHistory:
    """The chat with its in-chat injections, read newest first (§3.3 step 6).

    Chat messages come as their index in the chat, injections as entries.
    """

    chat: ChatView
    blocks: Sequence[InjectedBlock]

    def __len__(self) -> int:
        return len(self.chat) + len(self.blocks)

    def newest_first(self) -> Iterator[int | ChatEntry]:
        return newest_first(
            range(len(self.chat)),
            self.blocks,
            lambda b: ChatEntry(b.role.chat_role, b.text, "", injected=b),
        )

    def newest_role(self) -> str | None:
        item = next(self.newest_first(), None)
        if item is None:
            return None
        return item.role if isinstance(item, ChatEntry) else self.chat[item].role


def populate_history(
    context: AssemblyContext,
    turn: Turn,
    history: ChatHistory,
    by_id: Mapping[str, tuple[int, Slot]],
    layout: Layout,
) -> None:
    """SillyTavern `populateChatHistory` (algo-prompt-assembly.md §3.5)."""
    if "chatHistory" not in by_id:
        layout.history_stopped = True  # no message is ever sent
        if len(history):
            layout.dropped.append(
                (_left_out("chatHistory", len(history), older=False), "no_history_slot")
            )
        return
    cc = context.chat_completion
    container: list[Part] = []
    layout.add("chatHistory", container, by_id["chatHistory"][0])
    new_chat_part, end_parts = _reserved_controls(context, turn, by_id, layout)
    if history.newest_role() == "assistant" and cc.send_if_empty:
        empty = layout.part("emptyUserMessageReplacement", "user", cc.send_if_empty, kind="control")
        if layout.affordable(empty):
            layout.insert(empty, "chatHistory")

    container[:0] = _fitted(context, turn, history, layout)

    layout.budget += new_chat_part.tokens
    layout.insert(new_chat_part, "chatHistory", "start")
    for part in end_parts:
        layout.budget += part.tokens
        layout.insert(part, "chatHistory", "end")


def _left_out(identifier: str, count: int, *, older: bool) -> Part:
    """The ledger's line for `count` chat messages that were not sent."""
    return Part(
        identifier,
        "user",
        "",
        0,
        kind="history",
        source=f"{count} older messages" if older else f"{count} messages",
        source_code="older_messages" if older else "messages",
        source_params={"n": count},
    )


def _reserved_controls(
    context: AssemblyContext,
    turn: Turn,
    by_id: Mapping[str, tuple[int, Slot]],
    layout: Layout,
) -> tuple[Part, list[Part]]:
    """The new-chat separator and the group and continue nudges, their tokens reserved.

    Returns the separator (it goes before the chat) and the nudges (they go after it).
    """
    cc = context.chat_completion
    kind = context.generation_type
    new_chat = cc.new_group_chat_prompt if context.is_group else cc.new_chat_prompt
    group = {"group": ", ".join(context.group_members)} if context.is_group else {}
    new_chat_part = layout.part(
        "newMainChat",
        "system",
        turn.substitute(new_chat, group) if new_chat else "",
        kind="separator",
    )
    layout.budget -= new_chat_part.tokens

    end_parts: list[Part] = []
    if context.is_group and "groupNudge" in by_id and kind is not GenerationType.IMPERSONATE:
        slot = by_id["groupNudge"][1]
        end_parts.append(layout.part("groupNudge", slot.role, slot.content, kind="control"))
        layout.budget -= end_parts[-1].tokens

    if kind is GenerationType.CONTINUE and turn.chat and not cc.continue_prefill:
        last_text = turn.chat[-1].text
        # Script.js adds the continue postfix before the nudge reads the text; trim drops it.
        cycle = last_text if last_text.endswith(" ") else last_text + cc.continue_postfix
        text = turn.substitute(cc.continue_nudge_prompt, {"lastChatMessage": cycle.strip()})
        text = turn.substitute(text, {})
        end_parts.append(layout.part("continueNudge", "system", text, kind="control"))
        layout.budget -= end_parts[-1].tokens
    return new_chat_part, end_parts


def _fitted(
    context: AssemblyContext, turn: Turn, history: ChatHistory, layout: Layout
) -> list[Part]:
    """The chat's parts that fit the budget, newest first until one does not, oldest first.

    A continue's prefill (the newest real message) goes to its own slot instead.
    """
    prefill = context.generation_type is GenerationType.CONTINUE
    prefill = prefill and context.chat_completion.continue_prefill
    seen_real = False
    total = len(history)
    newest_parts: list[Part] = []
    for position, entry in enumerate(history.newest_first()):
        real = isinstance(entry, int)
        is_first_real = real and not seen_real
        seen_real = seen_real or real
        if isinstance(entry, int):
            part = history.chat.part(entry, layout)
        else:
            part = _history_part(layout, entry, context, turn)
        if not layout.affordable(part):
            layout.dropped.append((part, "history_did_not_fit"))
            layout.history_stopped = True
            # Messages the caller left out (a long chat given by its end) are older too.
            older = total - position - 1 + context.earlier.visible
            if older:
                marker = _left_out("chatHistory:older", older, older=True)
                layout.dropped.append((marker, "history_stops"))
            break
        if prefill and is_first_real:
            layout.add("continuePrefill", [part], None)
            continue
        if part.content or part.images:
            # Same as inserting each at the start, newest first; reversed once below.
            newest_parts.append(part)
            layout.budget -= part.tokens
    newest_parts.reverse()
    return newest_parts


def _history_part(layout: Layout, entry: ChatEntry, context: AssemblyContext, turn: Turn) -> Part:
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
        source, params = depth_source(
            block.depth,
            block.role.chat_role,
            [
                ((s.key if s.kind == "summary" else s.source or s.key), summary_of(s))
                if isinstance(s, Injection)
                else (s.source or s.identifier, "")
                for s in block.sources
            ],
        )
        return layout.part(
            f"injection@{block.depth}:{block.role.chat_role}",
            entry.role,
            content,
            kind="injection",
            source=source,
            volatile=True,
            source_code="depth_injection",
            source_params=params,
        )
    part = layout.part(
        f"chatHistory:{entry.message_id}",
        entry.role,
        content,
        name,
        kind="history",
        source=entry.message_id,
    )
    if entry.image is not None:
        # openai.js Message.addImage: the picture's cost is added to the text's.
        part.images = (entry.image,)
        part.tokens += image_tokens(entry.image)
    return part
