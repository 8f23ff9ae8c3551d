"""SillyTavern chat files (JSONL, solo and group): read them into a document and write them back.

A document keeps every JSON value of the file, unknown keys and key order included, so reading a
file and writing it again gives the same JSON values line by line (and the same bytes for files
SillyTavern wrote). Typed properties give the fields taverna understands.

The document's lines (`lines`), reading (`reading`), writing (`writing`) and the dates a
chat file holds (`send_dates`) are modules of their own; this is their public face.
"""

from __future__ import annotations

from taverna.formats.chat_fields import FORKS
from taverna.formats.st_chat.lines import (
    JSONL_LAYOUT,
    MESSAGE_KEYS,
    ChatDocument,
    ChatFileMetadata,
    ChatHeader,
    JsonObject,
    JsonValue,
    MessageLine,
    SkippedLine,
    Swipe,
    document,
    make_header,
    make_message,
)
from taverna.formats.st_chat.reading import (
    iter_lines,
    read_chat,
    read_chat_messages,
    shown_differs,
)
from taverna.formats.st_chat.send_dates import (
    format_send_date,
    humanized_date,
    iso_date,
    parse_send_date,
)
from taverna.formats.st_chat.writing import chat_as_text, chat_lines, dump_json, write_chat

__all__ = [
    "FORKS",
    "JSONL_LAYOUT",
    "MESSAGE_KEYS",
    "ChatDocument",
    "ChatFileMetadata",
    "ChatHeader",
    "JsonObject",
    "JsonValue",
    "MessageLine",
    "SkippedLine",
    "Swipe",
    "chat_as_text",
    "chat_lines",
    "document",
    "dump_json",
    "format_send_date",
    "humanized_date",
    "iso_date",
    "iter_lines",
    "make_header",
    "make_message",
    "parse_send_date",
    "read_chat",
    "read_chat_messages",
    "shown_differs",
    "write_chat",
]
