"""The provider-neutral prompt: what the engine builds and every provider converts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from taverna.model.lorebook import EntryTrace


class Role(StrEnum):
    """Roles of a chat-completion message."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


@dataclass(frozen=True, slots=True)
class PromptImage:
    """An image sent inside a message (SillyTavern's inline images): a `data:` URL, the
    picture's size in pixels (0 when unknown) and the detail asked of the model
    (`low`, `high` or `auto`, the preset's `inline_image_quality`)."""

    data_url: str
    width: int = 0
    height: int = 0
    detail: str = "low"

    @property
    def media_type(self) -> str:
        """The MIME type the data URL declares (`image/png`)."""
        head = self.data_url.split(";", 1)[0]
        return head.split(":", 1)[1] if ":" in head else ""

    @property
    def base64(self) -> str:
        """The base64 payload of the data URL."""
        return self.data_url.split(",", 1)[1] if "," in self.data_url else ""


@dataclass(frozen=True, slots=True)
class PromptMessage:
    """One message of a chat-completion prompt.

    `name` is the optional speaker name some APIs accept; `tool_calls` and
    `tool_call_id` carry a tool round; `source` is the ledger key of the part
    this message came from; `images` are sent with the text where the API takes them.
    """

    role: Role
    content: str
    name: str | None = None
    tool_calls: tuple[Mapping[str, Any], ...] = ()
    tool_call_id: str | None = None
    source: str = ""
    images: tuple[PromptImage, ...] = ()


@dataclass(frozen=True, slots=True)
class LedgerItem:
    """One part of the prompt, where it came from, what it cost, and whether it went in.

    `kind` names the source class (slot, lorebook, injection, history, example, ...);
    `source` identifies it (slot id, `book/uid`, `depth:4`, message id); `reason`
    says why it was cut or how it was placed. `position` places an included part: the
    index of its message (Chat Completion) or of its piece of the text (Text
    Completion, where the pieces in order are the prompt text). Lines of kind
    `overhead` hold tokens no part owns (reply priming, token padding, seams), so
    the included lines add up to `Ledger.total_tokens`.
    """

    kind: str
    source: str
    tokens: int
    included: bool = True
    reason: str = ""
    text: str = ""
    position: int | None = None
    # the reason's code of `LEDGER_REASONS` and its values, for a page to say it in its
    # language; given a code and no reason, the reason is the code's English sentence
    code: str = ""
    params: Mapping[str, str | int] = field(default_factory=dict)
    # the source's code of `LEDGER_SOURCES` and its values (names stay as written), for a
    # page to say in its language what `source` says in English; empty for a source that
    # is itself a name or an identifier (a slot id, `book/uid`, a message id)
    source_code: str = ""
    source_params: Mapping[str, str | int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.code and not self.reason:
            object.__setattr__(self, "reason", ledger_reason(self.code, self.params))
        if self.source_code and not self.source:
            object.__setattr__(self, "source", ledger_source(self.source_code, self.source_params))


# What a ledger line says of itself, by code: its English words; a page has its own.
LEDGER_REASONS: dict[str, str] = {
    "context_full": "context full",
    "not_placed": "not placed",
    "older_not_sent": "{why}: {n} older message(s) not sent",
    "required_does_not_fit": "budget: a required part does not fit",
    "budget_exceeded": "token budget exceeded at {at}",
    "history_did_not_fit": "budget: history is filled newest to oldest; this message did not fit",
    "history_stops": (
        "budget: history is filled newest to oldest and stops at the first message that "
        "does not fit"
    ),
    "examples_after_history": "budget: examples take what is left after the history",
    "no_history_slot": "no chatHistory slot in the order",
    "reply_primed": "every reply is primed",
    "token_padding": "added to every count to allow for a tokenizer's error (token_padding)",
    "joins": "tokens merged or split where the parts meet",
    "template_markers": "the chat template's role markers and special tokens",
    "placed": "{place}",
    "recall_score": "score {score}",
    "recall_below": "score {score}; below the threshold of {threshold}",
    "recall_past": "score {score}; past {insert}",
    "recall_over_budget": "score {score}; over the recall budget of {budget} tokens",
    "prompt_handler_added": "added by a prompt handler",
    "prompt_handler_removed": "removed by a prompt handler",
    "prompt_handler_changed": "changed by a prompt handler",
}


# What a ledger line's source says, by code: the English words `LedgerItem.source` keeps
# (the prompt command, the CLI and API clients read them); a page has its own. The values
# named `names` and `name` are the person's names, shown as they are; `role` is a
# chat role (system, user, assistant); `summary`, when given, is the id of the message a
# summary among the names belongs to. Example blocks and their turns count from 1, in
# either kind of prompt.
LEDGER_SOURCES: dict[str, str] = {
    "reply_priming": "reply priming",
    "token_padding": "token padding",
    "joins": "joins",
    "template": "template",
    "messages": "{n} messages",
    "older_messages": "{n} older messages",
    "depth_injection": "depth {depth} {role}: {names}",
    "example_block_turn": "block {block} turn {turn}",
    "example_block": "block {block}",
    "moved_to_end": "lorebook and extension prompts",
    "parts": "{names}",
    # system messages merged into one (squashed): `joined` is their sources' English
    # joined by "+"; `parts` is the list of the merged parts' sources as JSON, each
    # {"source", "code", "params"} (a piece without a code is a slot id or a name)
    "merged": "{joined}",
    "before_story_string": "before story string",
    "after_story_string": "after story string",
    "before_story_string_named": "before story string: {name}",
    "after_story_string_named": "after story string: {name}",
    "context_template": "context template",
    "continued_message": "message being continued",
    "system_message": "system message",
}


def ledger_source(code: str, params: Mapping[str, str | int]) -> str:
    """A ledger source code's English words, its values put in."""
    return LEDGER_SOURCES[code].format_map(params)


def ledger_reason(code: str, params: Mapping[str, str | int]) -> str:
    """A ledger code's sentence in English, its values put in."""
    params = dict(params)
    if "why" in params:
        params["why"] = LEDGER_REASONS.get(str(params["why"]), str(params["why"]))
    return LEDGER_REASONS[code].format_map(params)


@dataclass(frozen=True, slots=True)
class SkippedRegex:
    """A user regex that a time limit stopped (or kept from running) in one turn, and how often.

    `kind` is `lorebook key` or `regex script`; `source` names where it comes from (a
    lorebook entry as `book/uid`, a script by its name); `pattern` is the pattern as
    written; `reason` says which limit and what followed from it.
    """

    kind: str
    source: str
    pattern: str
    reason: str
    count: int = 1
    # the reason's code (`regex_key_stopped`, `regex_script_stopped`, `regex_key_not_run`,
    # `regex_script_not_run`) and its time in milliseconds (`ms`), for a page's own words
    code: str = ""
    params: Mapping[str, str | int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The record as plain JSON (a stored prompt's ledger keeps it so)."""
        return {
            "kind": self.kind,
            "source": self.source,
            "pattern": self.pattern,
            "reason": self.reason,
            "code": self.code,
            "params": dict(self.params),
            "count": self.count,
        }


@dataclass(frozen=True, slots=True)
class Ledger:
    """Every part considered for a prompt, in prompt order, plus the lorebook trace.

    `history_stopped`: the budget stopped the chat history before its oldest message
    (or no history could go in at all), so messages older than those given could not
    have gone in either: a caller that gave only the end of a long chat knows it gave
    enough. `skipped_regexes`: the user regexes (lorebook regex keys, regex scripts) a
    time limit stopped or kept from running this turn. `tokenizer`: the tokenizer the
    parts were counted with, so a caller can count other text the same way.
    `scanned_books`: the names of the lorebooks the scan read this turn, so an empty
    trace can say "books attached, nothing matched" rather than nothing.
    `aborted`: (by whom, why) when a generation interceptor would stop this turn; a dry
    run still shows the prompt as built, though nothing would be sent. `slot_tokens`: what
    each prompt manager slot cost, by identifier.
    """

    items: tuple[LedgerItem, ...] = ()
    total_tokens: int = 0
    budget: int = 0
    trace: tuple[EntryTrace, ...] = ()
    history_stopped: bool = False
    skipped_regexes: tuple[SkippedRegex, ...] = ()
    tokenizer: str = ""
    scanned_books: tuple[str, ...] = ()
    aborted: tuple[str, str] | None = None
    # why the parts were counted otherwise than the settings ask (the backend's tokenizer
    # did not answer, and the estimate stood in); "" when they were not
    tokenizer_note: str = ""
    # the tokens each slot of the prompt manager's order sent (Chat Completion), by its
    # identifier, counted before messages were merged
    slot_tokens: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Prompt:
    """What one generation sends: chat messages or text, stop strings, sampling, ledger.

    Exactly one of `messages` (chat completion) and `text` (text completion) is
    meaningful, as `kind` says. `prefill` is text the assistant's reply should start
    with (continue, or a preset's assistant prefill). `sampling` holds the preset's
    sampling fields by SillyTavern's names; providers map them to each API.
    `state` is the chat's state after this turn, for the caller to record on the new
    node: `timedWorldInfo` (lorebook timers) and `variables`; empty for a dry run.
    `new_chat_prompt`: the preset's new-chat separator with its macros done (chat
    completion only); Gemini's request stops on it.
    """

    kind: str  # "chat" or "text"
    messages: tuple[PromptMessage, ...] = ()
    text: str = ""
    stop: tuple[str, ...] = ()
    prefill: str = ""
    sampling: Mapping[str, Any] = field(default_factory=dict)
    ledger: Ledger = field(default_factory=Ledger)
    state: Mapping[str, Any] = field(default_factory=dict)
    new_chat_prompt: str = ""
