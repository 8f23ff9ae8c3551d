"""Reading a SillyTavern chat file (JSONL) into a document, strictly or as leniently as
SillyTavern reads it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import cast

from taverna.errors import FormatError, FormatWarning, library_cause, raw_words
from taverna.formats.chat_fields import check_header, check_message, describe
from taverna.formats.coercion import Said
from taverna.formats.json_text import TextLayout, layout_of
from taverna.formats.st_chat.lines import (
    JSONL_LAYOUT,
    ChatDocument,
    ChatHeader,
    JsonObject,
    JsonValue,
    MessageLine,
    SkippedLine,
)


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


def shown_differs(value: JsonObject) -> bool:
    """A message whose shown text (`mes`) is not its selected swipe (`swipes[swipe_id]`),
    all swipes written: a file edited by hand or by another tool."""
    mes, swipes, index = value.get("mes"), value.get("swipes"), value.get("swipe_id")
    if not isinstance(mes, str) or not isinstance(swipes, list) or type(index) is not int:
        return False
    if not 0 <= index < len(swipes) or not all(isinstance(s, str) for s in swipes):
        return False
    return swipes[index] != mes


def _differs_warning(source: str, line: int) -> FormatWarning:
    said = Said(
        f"line {line}: the message shows another text than its selected swipe; both are "
        "kept as candidates, the shown one selected",
        "mes_differs_from_swipe",
        line=line,
    )
    return FormatWarning(said, file=source, field="mes")


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
                # a greeting shows its swipe with macros filled in (formats-chat.md §4.3)
                if (messages or value.get("is_user")) and shown_differs(value):
                    found.append(_differs_warning(source, number))
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
