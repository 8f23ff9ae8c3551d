"""The lines of a SillyTavern chat file as a document: the header with the chat's
metadata, the message lines, the lines a lenient read left out.

Every value of the file is kept, unknown keys and key order included; typed properties
give the fields taverna understands (formats-chat.md §3, §4).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from taverna.errors import FormatWarning
from taverna.formats.chat_fields import FORKS
from taverna.formats.json_text import TextLayout

JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"
JsonObject: TypeAlias = dict[str, JsonValue]


# formats-chat.md §4.1: the message keys taverna reads; all others travel untouched.
MESSAGE_KEYS = (
    "name",
    "is_user",
    "is_system",
    "send_date",
    "mes",
    "extra",
    "swipe_id",
    "swipes",
    "swipe_info",
)


@dataclass(frozen=True)
class ChatFileMetadata:
    """The `chat_metadata` object of a chat: author's note, variables, timers, links (formats-chat.md §3.1)."""

    fields: JsonObject = field(default_factory=dict)

    def _str(self, key: str) -> str | None:
        value = self.fields.get(key)
        return value if isinstance(value, str) else None

    def _int(self, key: str, default: int) -> int:
        value = self.fields.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return default
        return int(value)

    @property
    def main_chat(self) -> str | None:
        """Name of the chat a checkpoint or branch was copied from."""
        return self._str("main_chat")

    @property
    def world_info(self) -> str | None:
        """Name of the lorebook bound to this chat."""
        return self._str("world_info")

    @property
    def persona(self) -> str | None:
        """Avatar file of the persona locked to this chat."""
        return self._str("persona")

    @property
    def integrity(self) -> str | None:
        """The save-integrity slug of newer SillyTavern releases (formats-chat.md §9)."""
        return self._str("integrity")

    @property
    def note_prompt(self) -> str:
        """Author's note text."""
        return self._str("note_prompt") or ""

    @property
    def note_interval(self) -> int:
        """Insert the author's note every N user messages (0 = never)."""
        return self._int("note_interval", 1)

    @property
    def note_position(self) -> int:
        """0 in prompt, 1 in chat at depth, 2 before the prompt."""
        return self._int("note_position", 1)

    @property
    def note_depth(self) -> int:
        """Depth of the author's note in chat."""
        return self._int("note_depth", 4)

    @property
    def note_role(self) -> int:
        """0 system, 1 user, 2 assistant."""
        return self._int("note_role", 0)

    @property
    def variables(self) -> dict[str, JsonValue]:
        """STscript chat variables (name -> string or number)."""
        value = self.fields.get("variables")
        return dict(value) if isinstance(value, dict) else {}

    @property
    def timed_world_info(self) -> JsonObject:
        """World-info timers `{"sticky": {...}, "cooldown": {...}}`."""
        value = self.fields.get("timedWorldInfo")
        return dict(value) if isinstance(value, dict) else {"sticky": {}, "cooldown": {}}

    def with_fields(self, **changes: JsonValue) -> ChatFileMetadata:
        """A copy with some keys set (a value of None removes the key)."""
        fields = dict(self.fields)
        for key, value in changes.items():
            if value is None:
                fields.pop(key, None)
            else:
                fields[key] = value
        return ChatFileMetadata(fields)


@dataclass(frozen=True)
class ChatHeader:
    """The first line of a solo chat (and of newer group chats): names, creation date, metadata."""

    fields: JsonObject = field(default_factory=dict)

    @property
    def user_name(self) -> str | None:
        value = self.fields.get("user_name")
        return value if isinstance(value, str) else None

    @property
    def character_name(self) -> str | None:
        value = self.fields.get("character_name")
        return value if isinstance(value, str) else None

    @property
    def create_date(self) -> str | None:
        value = self.fields.get("create_date")
        return value if isinstance(value, str) else None

    @property
    def metadata(self) -> ChatFileMetadata:
        value = self.fields.get("chat_metadata")
        return ChatFileMetadata(dict(value) if isinstance(value, dict) else {})

    def with_metadata(self, metadata: ChatFileMetadata) -> ChatHeader:
        """A copy whose `chat_metadata` is replaced, other keys kept in place."""
        fields = dict(self.fields)
        fields["chat_metadata"] = dict(metadata.fields)
        return ChatHeader(fields)


@dataclass(frozen=True)
class Swipe:
    """One alternative of a message: its text and its `swipe_info` record (None where the list is shorter)."""

    text: str | None
    info: JsonObject | None


@dataclass(frozen=True)
class MessageLine:
    """One message line; `fields` holds every key of the line in file order."""

    fields: JsonObject

    @property
    def name(self) -> str:
        value = self.fields.get("name")
        return value if isinstance(value, str) else ""

    @property
    def is_user(self) -> bool:
        return self.fields.get("is_user") is True

    @property
    def hidden(self) -> bool:
        """Hidden from the prompt (`is_system: true`), still shown to the person."""
        return self.fields.get("is_system") is True

    @property
    def text(self) -> str:
        value = self.fields.get("mes")
        return value if isinstance(value, str) else ""

    @property
    def send_date(self) -> str | int | float | None:
        value = self.fields.get("send_date")
        return (
            value if isinstance(value, str | int | float) and not isinstance(value, bool) else None
        )

    @property
    def extra(self) -> JsonObject:
        value = self.fields.get("extra")
        return dict(value) if isinstance(value, dict) else {}

    @property
    def is_narrator(self) -> bool:
        """A `/sys` narrator message: sent to the model as a system message (formats-chat.md §4.3)."""
        return self.extra.get("type") == "narrator" and not self.is_user

    @property
    def swipe_id(self) -> int | None:
        value = self.fields.get("swipe_id")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def swipes(self) -> tuple[Swipe, ...] | None:
        """The alternatives of this message with their `swipe_info`, or None without `swipes`."""
        texts = self.fields.get("swipes")
        if not isinstance(texts, list):
            return None
        raw_info = self.fields.get("swipe_info")
        infos = raw_info if isinstance(raw_info, list) else []
        result = []
        for index, text in enumerate(texts):
            info = infos[index] if index < len(infos) else None
            result.append(
                Swipe(
                    text if isinstance(text, str) else None,
                    dict(info) if isinstance(info, dict) else None,
                )
            )
        return tuple(result)

    @property
    def swipes_consistent(self) -> bool:
        """True when `swipes[swipe_id]` is the shown text, the state SillyTavern keeps after a save.

        Files caught mid-swipe (`swipe_id == len(swipes)`, a null swipe) or edited by hand are not,
        and an importer should keep their swipe fields verbatim instead of splitting them.
        """
        swipes, index = self.swipes, self.swipe_id
        if not self.swipes_well_formed or swipes is None or index is None:
            return False
        return swipes[index].text == self.text

    @property
    def swipes_well_formed(self) -> bool:
        """True when the swipe fields describe a choice among texts: a valid `swipe_id`, no
        null swipe, `swipe_info` no longer than `swipes` (whatever `mes` says).

        A greeting is such a message whose `mes` has its macros substituted while `swipes`
        keeps the raw text (formats-chat.md §4.3).
        """
        swipes = self.swipes
        index = self.swipe_id
        if swipes is None or index is None or not 0 <= index < len(swipes):
            return False
        if any(s.text is None for s in swipes):
            return False
        raw_info = self.fields.get("swipe_info") or []
        if not isinstance(raw_info, list) or len(raw_info) > len(swipes):
            return False
        return all(isinstance(item, dict) for item in raw_info)

    @property
    def forks(self) -> tuple[tuple[MessageLine, ...], ...]:
        """The continuations recorded beside this message (`taverna_forks`), oldest first."""
        value = self.fields.get(FORKS)
        if not isinstance(value, list):
            return ()
        return tuple(
            tuple(MessageLine(m) for m in branch if isinstance(m, dict))
            for branch in value
            if isinstance(branch, list)
        )

    def with_fields(self, **changes: JsonValue) -> MessageLine:
        """A copy with keys set in place (new keys go last)."""
        fields = dict(self.fields)
        fields.update(changes)
        return MessageLine(fields)

    def without(self, *keys: str) -> MessageLine:
        """A copy without the given keys."""
        return MessageLine({k: v for k, v in self.fields.items() if k not in keys})


@dataclass(frozen=True)
class SkippedLine:
    """A line a lenient read left out, and why (SillyTavern drops unparseable lines silently)."""

    line: int
    reason: str
    # the reason's code and params, for a page to say it in its language
    code: str = ""
    params: Mapping[str, str | int] = field(default_factory=dict)


JSONL_LAYOUT = TextLayout(indent=None)
"""formats-chat.md §2: lines joined by `\\n`, no final newline, no byte-order mark."""


@dataclass(frozen=True)
class ChatDocument:
    """A whole chat file: an optional header line and the messages in order.

    `layout`: the file's line breaks, what follows its last line and its byte-order mark,
    so that it is written back as it was.
    """

    header: ChatHeader | None
    messages: tuple[MessageLine, ...]
    skipped: tuple[SkippedLine, ...] = ()
    warnings: tuple[FormatWarning, ...] = ()  # values read otherwise than written
    layout: TextLayout = JSONL_LAYOUT

    @property
    def metadata(self) -> ChatFileMetadata:
        return self.header.metadata if self.header is not None else ChatFileMetadata()

    @property
    def is_group(self) -> bool:
        """A group chat: first message marked `is_group`, or no header line (formats-chat.md §6.2)."""
        if self.messages and self.messages[0].fields.get("is_group") is True:
            return True
        return self.header is None

    @property
    def main_chat(self) -> str | None:
        return self.metadata.main_chat


def make_header(
    *,
    user_name: str,
    character_name: str,
    create_date: str,
    metadata: Mapping[str, JsonValue] | None = None,
) -> ChatHeader:
    """A header line in the 1.12.6 layout."""
    return ChatHeader(
        {
            "user_name": user_name,
            "character_name": character_name,
            "create_date": create_date,
            "chat_metadata": dict(metadata or {}),
        }
    )


def make_message(
    *,
    name: str,
    is_user: bool,
    text: str,
    send_date: str | int | float,
    hidden: bool = False,
    extra: Mapping[str, JsonValue] | None = None,
    swipes: Sequence[Swipe] | None = None,
    swipe_id: int = 0,
    base: Mapping[str, JsonValue] | None = None,
) -> MessageLine:
    """A message line; `base` supplies other keys (and their order) to keep.

    With `swipes`, `mes` is `swipes[swipe_id]` and `swipe_info` lists the records the swipes have,
    in order, as SillyTavern keeps them.
    """
    fields: JsonObject = dict(base or {})
    fields["name"] = name
    fields["is_user"] = is_user
    fields["is_system"] = hidden
    fields["send_date"] = send_date
    fields["mes"] = text
    fields["extra"] = dict(extra or {})
    if swipes is not None:
        fields["swipe_id"] = swipe_id
        fields["swipes"] = [s.text for s in swipes]
        fields["swipe_info"] = [s.info for s in swipes if s.info is not None]
    return MessageLine(fields)


def document(
    header: ChatHeader | None,
    messages: Iterable[MessageLine],
    skipped: Iterable[SkippedLine] = (),
    layout: TextLayout = JSONL_LAYOUT,
) -> ChatDocument:
    """A document from its parts."""
    return ChatDocument(header, tuple(messages), tuple(skipped), layout=layout)
