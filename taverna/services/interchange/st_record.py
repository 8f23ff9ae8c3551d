"""The `_st` record: what SillyTavern's files need back on export, kept beside the tree.

Node extras, chat metadata and path states carry it under one reserved key (key order, swipe
records, file names, headers); `key_shape` and `apply_shape` keep the key order of nested
objects for stores that sort them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taverna.formats.json_text import TextLayout
from taverna.formats.st_chat import JSONL_LAYOUT
from taverna.model.chat import Chat, ChatState, Node

# Reserved key in node extras, chat metadata and state extras for what SillyTavern's files
# need back on export (key order, swipe records, file names); SillyTavern never writes it.
ST = "_st"

# What SillyTavern restores from `swipe_info` when switching swipes (algo-chat-ops.md §1.2).
SWIPE_INFO_KEYS = ("send_date", "gen_started", "gen_finished", "extra")

# In a node's record: the node is the selected swipe of the message node named, a line that
# showed another text (both texts are candidates; the line goes back out as it came).
SELECTED_SWIPE_OF = "selected_swipe_of"


def key_shape(value: Any) -> Any:
    """The key order of every object inside a JSON value (None where nothing is to keep).

    Databases that store JSON as binary (PostgreSQL's JSONB) sort object keys; this records
    the order so `apply_shape` can put it back and a file comes back byte for byte.
    """
    if isinstance(value, dict):
        children = {}
        for key, item in value.items():
            if isinstance(item, dict | list):
                shape = key_shape(item)
                if shape is not None:
                    children[key] = shape
        result: dict[str, Any] = {}
        if len(value) > 1:
            result["k"] = list(value)
        if children:
            result["c"] = children
        return result or None
    if isinstance(value, list):
        items = {}
        for index, item in enumerate(value):
            if isinstance(item, dict | list):
                shape = key_shape(item)
                if shape is not None:
                    items[str(index)] = shape
        return {"c": items} if items else None
    return None


def apply_shape(value: Any, shape: Any) -> Any:
    """A JSON value with the key order `key_shape` recorded (keys it did not know go last)."""
    if not isinstance(shape, Mapping):
        return value
    children = shape.get("c") or {}
    if isinstance(value, dict):
        out = {k: value[k] for k in shape.get("k") or () if k in value}
        out.update((k, v) for k, v in value.items() if k not in out)
        for key, child in children.items():
            if key in out:
                out[key] = apply_shape(out[key], child)
        return out
    if isinstance(value, list):
        return [
            apply_shape(item, children[str(i)]) if str(i) in children else item
            for i, item in enumerate(value)
        ]
    return value


def node_record(node: Node) -> Mapping[str, Any]:
    """A node's record (empty for a node made here)."""
    value = node.extras.get(ST)
    return value if isinstance(value, Mapping) else {}


def chat_record(chat: Chat) -> Mapping[str, Any]:
    """A chat's record (empty for a chat made here)."""
    value = chat.metadata.get(ST)
    return value if isinstance(value, Mapping) else {}


def state_record(state: ChatState) -> Mapping[str, Any] | None:
    """The record a path state keeps of the file it came from, if any."""
    value = state.extras.get(ST)
    return value if isinstance(value, Mapping) else None


def layout_record(layout: TextLayout) -> dict[str, Any] | None:
    """How a chat file was laid out, for its record (None for SillyTavern's own layout)."""
    if layout == JSONL_LAYOUT:
        return None
    return {"newline": layout.newline, "end": layout.end, "bom": layout.bom}


def layout_from(record: Mapping[str, Any] | None) -> TextLayout:
    """The layout a record keeps (SillyTavern's own when it keeps none)."""
    value = record.get("layout") if record is not None else None
    if not isinstance(value, Mapping):
        return JSONL_LAYOUT
    newline = value.get("newline")
    end = value.get("end")
    return TextLayout(
        indent=None,
        newline=newline if newline in ("\n", "\r\n") else "\n",
        end=end if isinstance(end, str) and not end.strip() else "",
        bom=value.get("bom") is True,
    )
