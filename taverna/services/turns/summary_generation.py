"""Making a chat's summary with a model: on demand, or automatically after a reply.

As SillyTavern's Summarize extension (algo-chat-ops.md §3.2): automatic summaries come
every `promptInterval` messages and/or `promptForceWords` words since the last summary.
"Classic" builds the chat's usual prompt with the summary prompt as its quiet prompt;
"raw" sends the summary prompt as the system message and the messages since the last
summary (with that summary first) as the user's, as many as fit the context.

Two things differ on purpose. A summary has its own reply limit
(`overrideResponseLength`, else `SUMMARY_REPLY_TOKENS`), never the chat's reply length
that cuts SillyTavern's summaries at its factory settings; a summary that still hits its
limit is continued once, and if it stops at the limit again it is kept and flagged `cut`,
not passed off as whole. And it is recorded on the newest
message it covers (the path's end for classic, the last message sent for raw), so the
tree rolls it back when that message leaves the path.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from taverna.engine.assembly.context import GenerationType
from taverna.engine.macros import MacroContext, evaluate
from taverna.engine.tokens.registry import get_tokenizer
from taverna.errors import FormatError, ProviderError, QuotaExceeded, TavernaError
from taverna.model.chat import Node
from taverna.model.prompt import Prompt, PromptMessage, Role
from taverna.model.summary import SUMMARY_REPLY_TOKENS, SummarySettings
from taverna.providers.builders import build_request, stream_parser
from taverna.providers.events import Finish, FinishReason, StreamError, TextDelta
from taverna.services.library.active_settings import ACTIVE, SETTINGS_KIND, set_active
from taverna.services.library.watch import Kept, LibraryWatch
from taverna.services.memory.summaries import SummaryService, carries_summary
from taverna.services.turns import PreparedTurn
from taverna.services.turns.chat_connection import connection_for
from taverna.services.turns.service import GenerationService
from taverna.store.repository import Store

EXTENSION_SETTINGS = "extension_settings"
# memory/index.js getRawSummaryPrompt: room kept free beside the raw prompt.
RAW_PADDING = 64
# Raw mode counts with this tokenizer when the chat's own is not at hand.
RAW_TOKENIZER = "cl100k_base"
# Chats whose account is remembered (a chat's owner never changes), at most.
OWNERS_KEPT = 4096
_WORD = re.compile(r"\b\w+\b", re.ASCII)
_WORDS_MACRO = re.compile(r"\{\{words\}\}", re.IGNORECASE)


# ------------------------------------------------------------------ settings


def summary_settings(store: Store, owner: str = "") -> SummarySettings:
    """The person's Summarize settings (`extension_settings.memory` of the active document)."""
    docs = store.find_documents(SETTINGS_KIND, name=ACTIVE, owner=owner)
    extensions = docs[-1].data.get(EXTENSION_SETTINGS) if docs else None
    memory = extensions.get("memory") if isinstance(extensions, Mapping) else None
    if not isinstance(memory, Mapping):
        return SummarySettings()
    return SummarySettings.from_st(memory)


def save_summary_settings(store: Store, settings: SummarySettings, owner: str = "") -> None:
    """Keep the person's Summarize settings (under SillyTavern's names)."""
    docs = store.find_documents(SETTINGS_KIND, name=ACTIVE, owner=owner)
    extensions = docs[-1].data.get(EXTENSION_SETTINGS) if docs else None
    part = dict(extensions) if isinstance(extensions, Mapping) else {}
    part["memory"] = settings.to_st()
    set_active(store, EXTENSION_SETTINGS, part, owner)


# ------------------------------------------------------------------ when


@dataclass(frozen=True, slots=True)
class SinceLast:
    """What the path holds after its newest summary: messages (hidden ones too) and words."""

    messages: int
    words: int


def since_last_summary(nodes: Sequence[Node]) -> SinceLast:
    """memory/index.js getSummaryPromptForNow: count back to the newest summary."""
    messages = words = 0
    for node in reversed(nodes):
        if node.deleted:
            continue
        if carries_summary(node):
            break
        messages += 1
        words += len(_WORD.findall(node.content))
    return SinceLast(messages, words)


def summary_due(nodes: Sequence[Node], settings: SummarySettings) -> bool:
    """Whether an automatic summary is due after this path's newest reply (§3.2 step 2)."""
    if settings.frozen or settings.prompt_interval <= 0 or not settings.places_summary:
        return False
    live = sum(1 for n in nodes if not n.deleted)
    if live < settings.prompt_interval:
        return False
    since = since_last_summary(nodes)
    if since.messages >= settings.prompt_interval:
        return True
    return settings.prompt_force_words > 0 and since.words >= settings.prompt_force_words


def summary_prompt(settings: SummarySettings) -> str:
    """The summary prompt with `{{words}}` filled in (other macros resolve where it is sent)."""
    return _WORDS_MACRO.sub(str(settings.prompt_words), settings.prompt)


@dataclass(frozen=True, slots=True)
class RawText:
    """The user message of a raw summary request, and the newest message it holds."""

    text: str
    last_node_id: str | None


def raw_text(
    nodes: Sequence[Node],
    system_prompt: str,
    budget: int,
    *,
    max_messages: int = 0,
    count: Any = None,
) -> RawText:
    """memory/index.js getRawSummaryPrompt: the latest summary, then each message after it
    as `name:\\ntext`, joined by blank lines, while the whole (with the system prompt and
    `RAW_PADDING`) fits `budget` tokens. The path's last message and hidden or empty ones
    are left out."""
    counter = count or get_tokenizer(RAW_TOKENIZER).count
    live = [n for n in nodes if not n.deleted]
    start = 0
    latest = ""
    for index in range(len(live) - 2, -1, -1):  # the last message is never the summary's
        if carries_summary(live[index]):
            state = live[index].state
            assert state is not None and state.summary is not None
            latest, start = state.summary, index + 1
            break
    buffer: list[str] = []
    last: str | None = None

    def joined(with_system: bool) -> str:
        parts = [system_prompt] if with_system else []
        if latest:
            parts.append(latest)
        parts.append("\n\n".join(buffer))
        return "\n\n".join(parts).strip()

    for node in live[start:-1]:
        if node.hidden or not node.content:
            continue
        buffer.append(f"{node.speaker}:\n{node.content}")
        if counter(joined(True)) + RAW_PADDING > budget:
            buffer.pop()
            break
        last = node.id
        if max_messages > 0 and len(buffer) >= max_messages:
            break
    return RawText(joined(False), last)


# ------------------------------------------------------------------ making one


@dataclass(frozen=True, slots=True)
class SummaryOutcome:
    """A summary made (`node_id`: where it was recorded), or why none was (`skipped`).

    `cut`: the reply stopped at the summary's length limit, so its end may be missing.
    """

    text: str = ""
    node_id: str | None = None
    cut: bool = False
    raw: bool = False
    skipped: str = ""


class SummaryGenerator:
    """Makes summaries for the chats of one generation service (its connections, its
    prompt builder) and records them through `SummaryService`."""

    def __init__(self, generation: GenerationService, *, watch: LibraryWatch | None = None) -> None:
        self.generation = generation
        self.store = generation.store
        self.chats = generation.chats
        self.summaries = SummaryService(generation.chats)
        self.owner = generation.owner
        # After every reply: each account's settings, read again once the library changed,
        # and each chat's account (which never changes).
        self._settings: Kept[str, SummarySettings] = Kept(watch or LibraryWatch().watch(self.store))
        self._owners: OrderedDict[str, str] = OrderedDict()

    def settings(self, owner: str | None = None) -> SummarySettings:
        """The Summarize settings of an account (None: this service's)."""
        return summary_settings(self.store, self.owner if owner is None else owner)

    def change_settings(
        self, changes: Mapping[str, Any], owner: str | None = None
    ) -> SummarySettings:
        """Change some Summarize settings, given under SillyTavern's names (other keys kept)."""
        owner = self.owner if owner is None else owner
        merged = {**summary_settings(self.store, owner).to_st(), **changes}
        for key in ("prompt", "template", "connection"):
            if key in merged and not isinstance(merged[key], str):
                raise FormatError(
                    f"{key} must be a text",
                    field=key,
                    code="must_be_text",
                    params={"key": str(key)},
                )
        settings = SummarySettings.from_st(merged)
        save_summary_settings(self.store, settings, owner)
        return settings

    async def after_reply(self, chat_id: str) -> SummaryOutcome:
        """The automatic summary: made when one is due (§3.2), else skipped with a reason."""
        owner = self._owners.get(chat_id)
        if owner is None:
            owner = self.store.get_chat(chat_id).owner
            self._owners[chat_id] = owner
            while len(self._owners) > OWNERS_KEPT:
                self._owners.popitem(last=False)
        settings = self._settings.get(owner, lambda: self.settings(owner))
        if settings.frozen or settings.prompt_interval <= 0 or not settings.places_summary:
            return SummaryOutcome(skipped="automatic summaries are off")
        # Only the end of the path decides: past `promptInterval` messages back, a summary
        # is due whatever else lies further.
        tail = settings.prompt_interval + 1
        nodes = self.chats.active_path(chat_id, tail=tail).nodes
        if not summary_due(nodes, settings):
            return SummaryOutcome(skipped="not due")
        try:
            return await self.summarize(chat_id, settings=settings)
        except QuotaExceeded as exc:  # nothing was sent; the next reply tries again
            return SummaryOutcome(skipped=exc.message)

    async def summarize(
        self, chat_id: str, *, settings: SummarySettings | None = None
    ) -> SummaryOutcome:
        """Make a summary of the chat now and record it (with its owner's settings unless
        `settings` are given)."""
        settings = settings or self.settings(self.store.get_chat(chat_id).owner)
        if not summary_prompt(settings).strip():
            raise TavernaError(
                "the summary prompt is empty", field="prompt", code="summary_prompt_is_empty"
            )
        chat = self.store.get_chat(chat_id)
        # the summary's own connection, else the one the chat talks to
        connection = connection_for(
            self.generation.connections.of(chat.owner), chat, settings.connection or None
        )
        leaf = chat.active_leaf_id
        if leaf is None:
            raise TavernaError(
                "an empty chat has nothing to summarize",
                field="chat_id",
                code="summary_of_empty_chat",
            )
        limit = settings.override_response_length or SUMMARY_REPLY_TOKENS
        sampling = {"openai_max_tokens": limit, "genamt": limit}
        turn = self.generation.turn(chat, leaf, GenerationType.QUIET, connection.api, dry_run=True)
        turn = replace(turn, quiet_prompt=summary_prompt(settings), skip_wi_an=settings.skip_wi_an)
        built = self.generation.build_serialized(turn)
        classic = built.prompt if isinstance(built, PreparedTurn) else built
        at: str = leaf
        if settings.prompt_builder.is_raw:
            nodes = self.chats.active_path(chat_id).nodes
            system = _macros(summary_prompt(settings), chat.user_name, chat)
            budget = classic.ledger.budget or 4096
            raw = raw_text(nodes, system, budget, max_messages=settings.max_messages_per_request)
            if raw.last_node_id is None:
                return SummaryOutcome(skipped="no messages since the last summary", raw=True)
            at = raw.last_node_id
            prompt = _raw_prompt(system, raw.text, connection.api.is_text_completion, sampling)
        else:
            prompt = replace(classic, sampling={**classic.sampling, **sampling})
        text, cut = await self._ask(connection, prompt, chat)
        if cut and text.strip():
            # Stopped at its limit: asked once to go on from where it stopped.
            more, cut = await self._ask(connection, _continued(prompt, text), chat)
            text += more
        text = text.strip()
        if not text:
            raise ProviderError(
                "the model gave an empty summary", field="summary", code="model_gave_empty_summary"
            )
        revision = self.store.get_chat(chat_id).revision
        self.summaries.record(chat_id, at, text, revision=revision)
        return SummaryOutcome(text, at, cut, settings.prompt_builder.is_raw)

    async def _ask(self, connection: Any, prompt: Prompt, chat: Any) -> tuple[str, bool]:
        connections = self.generation.connections.of(chat.owner)
        base_url, key = await connections.endpoint(connection)
        members = tuple(c.name for c in chat.characters)
        options = connections.request_options(
            connection,
            user_name=chat.user_name or "User",
            char_name=members[0] if members else "",
        )
        request = build_request(prompt, connection.api, options, base_url=base_url, key=key)
        said: list[str] = []
        cut = False
        async for event in connections.stream(
            request,
            stream_parser(connection.api),
            client=self.generation.model_client(),
            secret=key,
            timeouts=self.generation.timeouts,
        ):
            if isinstance(event, TextDelta):
                said.append(event.text)
            elif isinstance(event, Finish):
                cut = event.reason is FinishReason.LENGTH
            elif isinstance(event, StreamError):
                raise ProviderError(
                    f"the summary failed: {event.message}",
                    field="summary",
                    code="summary_failed",
                    params={"message_name": str(event.message)},
                )
        text = "".join(said)
        if prompt.stop:
            text = _trim_at_stop(text, prompt.stop)
        return text, cut


def _continued(prompt: Prompt, said: str) -> Prompt:
    """The same request with what was said so far as the start of the answer."""
    if prompt.kind == "text":
        return replace(prompt, text=prompt.text + said)
    messages = (*prompt.messages, PromptMessage(Role.ASSISTANT, said))
    return replace(prompt, messages=messages)


def _trim_at_stop(text: str, stops: Sequence[str]) -> str:
    cut = min((text.find(s) for s in stops if s and s in text), default=-1)
    return text[:cut] if cut >= 0 else text


def _macros(text: str, user: str, chat: Any) -> str:
    char = chat.characters[0].name if chat.characters else ""
    return evaluate(text, MacroContext(user=user or "User", char=char)).text


def _raw_prompt(system: str, text: str, as_text: bool, sampling: Mapping[str, Any]) -> Prompt:
    """SillyTavern's `generateRaw(text, systemPrompt)`: a system and a user message (a
    plain text prompt for Text Completion)."""
    if as_text:
        return Prompt(kind="text", text=f"{system}\n\n{text}\n", sampling=sampling)
    messages = (PromptMessage(Role.SYSTEM, system), PromptMessage(Role.USER, text))
    return Prompt(kind="chat", messages=messages, sampling=sampling)
