"""Summary settings: how a chat's summary is made and where it goes in the prompt.

The names are SillyTavern's (`extension_settings.memory` of its Summarize extension,
algo-chat-ops.md §3), so its saved settings import unchanged; `from_st` reads that
object and `to_st` writes it back with the keys it came with. Two settings are
taverna's own: `hideCovered` (the messages a summary covers leave the prompt, as
`/hide` does, but for the newest `hideKeep` of them) and `connection` (the connection
summaries are made with).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import IntEnum, StrEnum
from typing import Any

from taverna.model.injection import ExtensionPosition, InjectionRole

DEFAULT_SUMMARY_PROMPT = (
    "Ignore previous instructions. Summarize the most important facts and events in the "
    "story so far. If a summary already exists in your memory, use that as a base and "
    "expand with new facts. Limit the summary to {{words}} words or less. Your response "
    "should include nothing but the summary."
)
DEFAULT_SUMMARY_TEMPLATE = "[Summary: {{summary}}]"
# The summary's own reply limit when `overrideResponseLength` is 0: SillyTavern would use
# the chat's reply length (300 tokens at its factory settings), which cuts summaries short.
SUMMARY_REPLY_TOKENS = 1024


class SummarySource(StrEnum):
    """Which model writes summaries (SillyTavern `summary_sources`).

    Only `main` exists here; SillyTavern's Extras API and WebLLM are not available, and
    SillyTavern 1.12.6 places no summary at all when its chosen source is unreachable.
    """

    MAIN = "main"
    EXTRAS = "extras"
    WEBLLM = "webllm"


class SummaryBuilder(IntEnum):
    """How the summary request is built (SillyTavern `prompt_builders`).

    CLASSIC: the usual prompt of the chat with the summary prompt as a quiet prompt.
    RAW: the messages themselves in the summary prompt, within a token budget
    (SillyTavern's blocking and non-blocking variants differ only in its UI).
    """

    CLASSIC = 0
    RAW_BLOCKING = 1
    RAW_NON_BLOCKING = 2

    @property
    def is_raw(self) -> bool:
        return self is not SummaryBuilder.CLASSIC


# Python field name -> SillyTavern key, in SillyTavern's order.
_ST_KEYS = {
    "frozen": "memoryFrozen",
    "skip_wi_an": "SkipWIAN",
    "source": "source",
    "prompt": "prompt",
    "template": "template",
    "position": "position",
    "role": "role",
    "scan": "scan",
    "depth": "depth",
    "prompt_words": "promptWords",
    "prompt_interval": "promptInterval",
    "prompt_force_words": "promptForceWords",
    "override_response_length": "overrideResponseLength",
    "max_messages_per_request": "maxMessagesPerRequest",
    "prompt_builder": "prompt_builder",
    "hide_covered": "hideCovered",
    "hide_keep": "hideKeep",
    "connection": "connection",
}


@dataclass(frozen=True, slots=True)
class SummarySettings:
    """The Summarize settings (algo-chat-ops.md §3), typed.

    `position` is SillyTavern's extension-prompt position: before the main prompt
    (2), after it (0), in the chat at `depth` as `role` (1), or nowhere (-1).
    `prompt_interval` 0 and `prompt_force_words` 0 switch the automatic summary off
    for their count. `override_response_length` 0 means the summary's own default
    limit (`SUMMARY_REPLY_TOKENS`), never the chat's reply length.
    """

    source: SummarySource = SummarySource.MAIN
    prompt: str = DEFAULT_SUMMARY_PROMPT
    template: str = DEFAULT_SUMMARY_TEMPLATE
    position: ExtensionPosition = ExtensionPosition.IN_PROMPT
    depth: int = 2
    role: InjectionRole = InjectionRole.SYSTEM
    scan: bool = False
    prompt_words: int = 200
    # SillyTavern's default is 10 (`from_st` reads a missing key so); a person who never
    # chose summary settings here gets no automatic summaries, only those asked for.
    prompt_interval: int = 0
    prompt_force_words: int = 0
    override_response_length: int = 0
    max_messages_per_request: int = 0
    prompt_builder: SummaryBuilder = SummaryBuilder.CLASSIC
    skip_wi_an: bool = False
    frozen: bool = False
    enabled: bool = True  # the extension is not in SillyTavern's `disabledExtensions`
    hide_covered: bool = False
    hide_keep: int = 4  # with `hide_covered`: the newest covered messages that stay visible
    connection: str = ""  # a saved connection's name; "" = the chat's own
    extras: Mapping[str, Any] = field(default_factory=dict)  # other keys, kept for export

    @property
    def places_summary(self) -> bool:
        """Whether the stored summary goes into the prompt at all.

        SillyTavern 1.12.6 sets its summary prompt on chat load only when its source
        can answer (`onChatEvent` returns early for an unreachable Extras API or WebLLM).
        """
        return (
            self.enabled
            and self.source is SummarySource.MAIN
            and self.position is not ExtensionPosition.NONE
        )

    @classmethod
    def from_st(
        cls, data: Mapping[str, Any], *, missing_source: SummarySource = SummarySource.MAIN
    ) -> SummarySettings:
        """SillyTavern's `extension_settings.memory` object; unknown keys are kept.

        Values are read as SillyTavern reads them (`Number(...)`, truthiness), so a
        position saved by its radio buttons as `"1"` means in-chat.
        """
        source_text = str(data.get("source", missing_source.value))
        try:
            source = SummarySource(source_text)
        except ValueError:
            source = SummarySource.EXTRAS  # a source that does not exist here cannot answer
        known = set(_ST_KEYS.values())
        return cls(
            source=source,
            prompt=_text(data, "prompt", DEFAULT_SUMMARY_PROMPT),
            template=_text(data, "template", DEFAULT_SUMMARY_TEMPLATE),
            position=_position(data.get("position", 0)),
            depth=_number(data.get("depth"), 2),
            role=InjectionRole.parse(_number(data.get("role"), 0)),
            scan=bool(data.get("scan", False)),
            prompt_words=_number(data.get("promptWords"), 200),
            prompt_interval=_number(data.get("promptInterval"), 10),
            prompt_force_words=_number(data.get("promptForceWords"), 0),
            override_response_length=_number(data.get("overrideResponseLength"), 0),
            max_messages_per_request=_number(data.get("maxMessagesPerRequest"), 0),
            prompt_builder=_builder(data.get("prompt_builder", 0)),
            skip_wi_an=bool(data.get("SkipWIAN", False)),
            frozen=bool(data.get("memoryFrozen", False)),
            hide_covered=bool(data.get("hideCovered", False)),
            hide_keep=max(0, _number(data.get("hideKeep"), 4)),
            connection=str(data.get("connection") or ""),
            extras={k: v for k, v in data.items() if k not in known},
        )

    def to_st(self) -> dict[str, Any]:
        """The settings as SillyTavern's `extension_settings.memory` object."""
        values: dict[str, Any] = {}
        for item in fields(self):
            key = _ST_KEYS.get(item.name)
            if key is None:
                continue
            value = getattr(self, item.name)
            if isinstance(value, StrEnum):
                value = value.value
            elif isinstance(value, IntEnum):
                value = int(value)
            values[key] = value
        return {**self.extras, **values}


def _text(data: Mapping[str, Any], key: str, default: str) -> str:
    value = data.get(key)
    return value if isinstance(value, str) else default


def _number(value: Any, default: int) -> int:
    """JavaScript's `Number(value)` as an int; what is not a number gives `default`."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value == value and abs(value) != float("inf") else default
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return 0
        try:
            return int(float(text))
        except ValueError:
            return default
    return default


def _position(value: Any) -> ExtensionPosition:
    number = _number(value, -1)
    try:
        return ExtensionPosition(number)
    except ValueError:
        return ExtensionPosition.NONE


def _builder(value: Any) -> SummaryBuilder:
    try:
        return SummaryBuilder(_number(value, 0))
    except ValueError:
        return SummaryBuilder.CLASSIC
