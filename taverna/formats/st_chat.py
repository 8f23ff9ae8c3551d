"""SillyTavern chat files (JSONL, solo and group): read them into a document and write them back.

A document keeps every JSON value of the file, unknown keys and key order included, so reading a
file and writing it again gives the same JSON values line by line (and the same bytes for files
SillyTavern wrote). Typed properties give the fields taverna understands.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TypeAlias, cast

from taverna.errors import FormatError, FormatWarning, library_cause, raw_words
from taverna.formats.chat_fields import FORKS as FORKS
from taverna.formats.chat_fields import check_header, check_message, describe
from taverna.formats.json_text import TextLayout, json_number, layout_of

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


# ---------------------------------------------------------------------------
# Metadata, header, messages


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


# ---------------------------------------------------------------------------
# Reading


def _reject_constant(name: str) -> JsonValue:
    raise ValueError(f"{name} is not valid JSON")


def _loads(text: str) -> JsonValue:
    try:
        return cast(JsonValue, json.loads(text, parse_constant=_reject_constant))
    except RecursionError:
        # A line nested deeper than the parser goes is bad input, not a crash.
        raise ValueError("nested too deeply") from None


def _is_header(value: JsonObject) -> bool:
    # formats-chat.md §2/§6: solo headers have no `mes`; 1.12.6 group chats start with a message.
    return "chat_metadata" in value or "mes" not in value


def iter_lines(data: str | bytes) -> Iterator[tuple[int, str]]:
    """The non-blank lines of a JSONL text with their 1-based numbers (BOM and CR tolerated)."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    if text.startswith("\ufeff"):
        text = text[1:]
    for number, raw in enumerate(text.split("\n"), start=1):
        if raw.strip():
            yield number, raw


def _flatten_chub(value: JsonObject) -> JsonObject:
    """formats-chat.md §10: Chub exports hold `{"message": ...}` objects where ST has text."""
    mes = value.get("mes")
    swipes = value.get("swipes")
    if not isinstance(mes, dict) and not (
        isinstance(swipes, list) and any(isinstance(s, dict) for s in swipes)
    ):
        return value
    flat = dict(value)
    if isinstance(mes, dict) and isinstance(mes.get("message"), str):
        flat["mes"] = mes["message"]
    if isinstance(swipes, list):
        flat["swipes"] = [
            s["message"] if isinstance(s, dict) and isinstance(s.get("message"), str) else s
            for s in swipes
        ]
    return flat


def read_chat(
    data: str | bytes,
    *,
    source: str = "<chat>",
    lenient: bool = False,
    flatten_chub: bool = False,
    warnings: list[FormatWarning] | None = None,
) -> ChatDocument:
    """Read a SillyTavern chat JSONL text.

    Loose values SillyTavern shows as they are (a number as `mes`, "true" as `is_user`)
    are read as it reads them, each noted in `warnings`.

    Strict by default: a line that is not a JSON object, or a known field of the wrong type, raises
    FormatError naming the source, the line and the field. `lenient=True` does what SillyTavern
    does with unparseable lines (drops them) and lists them in `skipped` instead.
    `flatten_chub=True` turns Chub's message objects into text, as SillyTavern's importer does.
    """
    try:
        lines = list(iter_lines(data))
    except UnicodeDecodeError as exc:
        raise FormatError(
            f"not UTF-8 text ({exc.reason})",
            file=source,
            code="not_utf_8_text",
            params={"reason": str(exc.reason), **library_cause(exc)},
        ) from None
    header: ChatHeader | None = None
    messages: list[MessageLine] = []
    skipped: list[SkippedLine] = []
    found: list[FormatWarning] = []
    first = True
    for number, raw in lines:
        try:
            value = _loads(raw)
            if not isinstance(value, dict):
                raise FormatError(
                    f"line {number}: expected a JSON object, found {describe(value)}",
                    file=source,
                    code="line_expected_json_object_found",
                    params={"number": str(number), "value": str(describe(value))},
                )
            if first and _is_header(value):
                value = check_header(value, source=source, line=number, warnings=found)
                header = ChatHeader(value)
            else:
                if flatten_chub:
                    value = _flatten_chub(value)
                value = check_message(value, source=source, line=number, warnings=found)
                messages.append(MessageLine(value))
        except ValueError as exc:
            # the parser's own words stay in the English text; a page says where by column
            params = {"number": str(number), **raw_words(exc)}
            skip = SkippedLine(number, f"not valid JSON ({exc})", "json_unreadable", params)
            if isinstance(exc, json.JSONDecodeError):
                # the file's line and the column in it: the parser's own count of lines
                # (always 1, for one line read alone) is left out
                params["column"] = str(exc.colno)
                why = f"not valid JSON at column {exc.colno} ({exc.msg})"
                skip = SkippedLine(number, why, "json_unreadable_at", params)
            if not lenient:
                raise FormatError(
                    f"line {number}: {skip.reason}",
                    file=source,
                    code="line_not_valid_json_at" if "column" in params else "line_not_valid_json",
                    params=params,
                ) from None
            skipped.append(skip)
        except FormatError as exc:
            if not lenient:
                raise
            skipped.append(SkippedLine(number, exc.message, exc.code or "", exc.params))
        first = False
    if warnings is not None:
        warnings.extend(found)
    return ChatDocument(
        header, tuple(messages), tuple(skipped), tuple(found), layout=_jsonl_layout(data)
    )


def _jsonl_layout(data: str | bytes) -> TextLayout:
    # The first line break and the file's end say it all; a long file is not scanned.
    layout = layout_of(data[:4096])
    end = layout_of(data[-64:]).end if len(data) > 4096 else layout.end
    found = TextLayout(indent=None, newline=layout.newline, end=end, bom=layout.bom)
    return JSONL_LAYOUT if found == JSONL_LAYOUT else found


def read_chat_messages(data: str | bytes, *, source: str = "<chat>") -> Iterator[JsonObject]:
    """The raw JSON objects of a chat file, one per line (for callers that stream large files)."""
    for number, raw in iter_lines(data):
        try:
            value = _loads(raw)
        except ValueError as exc:
            raise FormatError(
                f"line {number}: not valid JSON ({exc})",
                file=source,
                code="line_not_valid_json",
                params={"number": str(number), **raw_words(exc)},
            ) from None
        if not isinstance(value, dict):
            raise FormatError(
                f"line {number}: expected a JSON object",
                file=source,
                code="line_expected_json_object",
                params={"number": str(number)},
            )
        yield value


# ---------------------------------------------------------------------------
# Writing

# Python prints some floats differently from JavaScript (`1e-07`, `1e+16`, `5.0`); only lines
# where such a token may occur take the slower exact path.
_PY_ONLY_FLOAT = re.compile(r"[0-9]e[+-][0-9]|[0-9]\.0(?![0-9])")


def _dump_exact(value: JsonValue, out: list[str]) -> None:
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, float):
        out.append(json_number(value))
    elif isinstance(value, list):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _dump_exact(item, out)
        out.append("]")
    else:
        out.append("{")
        for index, (key, item) in enumerate(value.items()):
            if index:
                out.append(",")
            out.append(json.dumps(key, ensure_ascii=False))
            out.append(":")
            _dump_exact(item, out)
        out.append("}")


def dump_json(value: JsonValue) -> str:
    """One JSON value as compact text the way JavaScript's `JSON.stringify` writes it."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if _PY_ONLY_FLOAT.search(text) is None:
        return text
    out: list[str] = []
    _dump_exact(value, out)
    return "".join(out)


def chat_lines(document: ChatDocument) -> Iterator[str]:
    """The lines of a chat file, header first, without line breaks."""
    if document.header is not None:
        yield dump_json(document.header.fields)
    for message in document.messages:
        yield dump_json(message.fields)


def write_chat(document: ChatDocument) -> str:
    """The chat as its file was: compact JSON lines joined by its line break (SillyTavern's
    `\\n`, no final newline, for a chat made here)."""
    layout = document.layout
    text = layout.newline.join(chat_lines(document)) + layout.end
    return "\ufeff" + text if layout.bom else text


def chat_as_text(document: ChatDocument) -> str:
    """The chat as SillyTavern's plain-text export (formats-chat.md §10).

    `<name>: <text>` and a blank line per message with text, hidden messages left out, the
    shown text (`extra.display_text`) preferred.
    """
    parts = []
    for message in document.messages:
        if message.hidden or not message.text:
            continue
        shown = message.extra.get("display_text")
        text = shown if isinstance(shown, str) and shown else message.text
        parts.append(f"{message.name}: {text}\n\n")
    return "".join(parts)


# ---------------------------------------------------------------------------
# Building documents


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


# ---------------------------------------------------------------------------
# Dates (formats-chat.md §1, §5)

_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_LONG_HUMAN = re.compile(r"^([A-Z][a-z]+) (\d{1,2}), (\d{4}) (\d{1,2}):(\d{2}) ?([ap]m)$", re.I)
_SERVER_HUMAN = re.compile(
    r"^(\d{4})-(\d{1,2})-(\d{1,2}) ?@(\d{1,2})h ?(\d{1,2})m ?(\d{1,2})s(?: ?(\d{1,3})ms)?$"
)
_EPOCH = re.compile(r"^\d{9,16}$")


def parse_send_date(value: str | int | float | None) -> datetime | None:
    """The moment a `send_date` names, or None for a format SillyTavern does not read either.

    Human formats carry no zone (SillyTavern writes local time); they come back as naive datetimes.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return _from_epoch_ms(float(value))
    text = value.strip()
    if _EPOCH.match(text):
        return _from_epoch_ms(float(text))
    match = _LONG_HUMAN.match(text)
    if match:
        month_name, day, year, hour, minute, half = match.groups()
        months = [m.lower() for m in _MONTHS]
        if month_name.lower() not in months:
            return None
        hour_24 = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
        try:
            return datetime(
                int(year), months.index(month_name.lower()) + 1, int(day), hour_24, int(minute)
            )
        except ValueError:
            return None
    match = _SERVER_HUMAN.match(text)
    if match:
        year, month, day, hour, minute, second, millis = match.groups()
        try:
            return datetime(
                int(year),
                int(month),
                int(day),
                int(hour),
                int(minute),
                int(second),
                int(millis or 0) * 1000,
            )
        except ValueError:
            return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed


def _from_epoch_ms(millis: float) -> datetime | None:
    try:
        return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=millis)
    except OverflowError:
        return None


def format_send_date(moment: datetime) -> str:
    """A `send_date` in the 1.12.6 form, e.g. `September 28, 2024 2:05pm`."""
    hour = moment.hour % 12 or 12
    half = "pm" if moment.hour >= 12 else "am"
    return (
        f"{_MONTHS[moment.month - 1]} {moment.day}, {moment.year} {hour}:{moment.minute:02d}{half}"
    )


def humanized_date(moment: datetime) -> str:
    """The chat-name date `YYYY-MM-DD@HHhMMmSSs`."""
    return moment.strftime("%Y-%m-%d@%Hh%Mm%Ss")


def iso_date(moment: datetime) -> str:
    """A JavaScript `Date.toISOString()` value (UTC, milliseconds)."""
    utc = moment.astimezone(UTC) if moment.tzinfo else moment
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
