"""A parsed story string rendered with the turn's values, as Handlebars renders it
(no HTML escaping); a name it does not define goes to the macro engine."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from taverna.engine.macros.js import js_text
from taverna.engine.textgen.story_string.tree import (
    ID,
    ID_RE,
    Block,
    Comment,
    Content,
    Mustache,
    Program,
)
from taverna.engine.tokens.base import js_length
from taverna.errors import FormatError

MacroHook = Callable[[str], str]


@dataclass(frozen=True, slots=True)
class Frame:
    """Where a lookup starts: the current value, the enclosing frame (`../`) and the
    `@data` variables (`@index`, `@key`, `@first`, `@last`)."""

    value: Any
    parent: Frame | None
    data: Mapping[str, Any]


def render_program(program: Program, frame: Frame, missing: MacroHook, out: list[str]) -> None:
    """Append the text of `program` in `frame` to `out`."""
    for node in program.body:
        if isinstance(node, Content):
            out.append(node.value)
        elif isinstance(node, Comment):
            continue
        elif isinstance(node, Mustache):
            out.append(_render_mustache(node, frame, missing))
        else:
            _render_block(node, frame, missing, out)


def _render_mustache(node: Mustache, frame: Frame, missing: MacroHook) -> str:
    if node.path == "trim" and not node.params:
        # macros.js registers `trim` to survive rendering for the macro pass.
        return "{{trim}}"
    if node.params or not _is_lookup_path(node.path):
        # Not a value: SillyTavern's helperMissing sends `{{name}}` to the macros.
        return missing("{{" + node.path + "}}")
    value = _lookup(node.path, frame)
    if value is None:
        # Only a one-word name can be a helper; a missing `a.b` prints nothing.
        name = node.path[1:] if node.path.startswith("@") else node.path
        if ID_RE.fullmatch(name):
            return missing("{{" + name + "}}")
        return ""
    return js_text(value)


def _render_block(block: Block, frame: Frame, missing: MacroHook, out: list[str]) -> None:
    helper = block.helper
    if helper in ("if", "unless"):
        if len(block.params) != 1:
            raise FormatError(
                f"story string: #{helper} needs exactly one value",
                field="story_string",
                code="story_string_needs_exactly_one",
                params={"helper": str(helper)},
            )
        value = _param_value(block.params[0], frame)
        include_zero = _param_value(block.hash.get("includeZero", "false"), frame) is True
        truthy = not _is_empty(value) and (_js_truthy(value) or (include_zero and value == 0))
        if helper == "unless":
            truthy = not truthy
        chosen = block.program if truthy else block.inverse
        if chosen is not None:
            render_program(chosen, frame, missing, out)
        return
    if helper == "with":
        value = _param_value(block.params[0], frame) if block.params else None
        if not _is_empty(value) and _js_truthy(value):
            render_program(block.program, Frame(value, frame, frame.data), missing, out)
        elif block.inverse is not None:
            render_program(block.inverse, frame, missing, out)
        return
    if helper == "each":
        value = _param_value(block.params[0], frame) if block.params else None
        _render_each(block, value, frame, missing, out)
        return
    if block.params:
        # An unknown block helper with arguments: handed to the macros like a tag.
        out.append(missing("{{" + helper + "}}"))
        return
    # Handlebars' blockHelperMissing: the name is a value that decides the block; an
    # undefined name first goes through helperMissing (the macros), whose text decides.
    value = _lookup(helper, frame) if _is_lookup_path(helper) else None
    if value is None:
        value = missing("{{" + helper + "}}")
    if value is True:
        render_program(block.program, frame, missing, out)
    elif value is None or value is False:
        if block.inverse is not None:
            render_program(block.inverse, frame, missing, out)
    elif isinstance(value, list | tuple):
        _render_each(block, value, frame, missing, out)
    else:
        render_program(block.program, Frame(value, frame, frame.data), missing, out)


def _render_each(
    block: Block, value: Any, frame: Frame, missing: MacroHook, out: list[str]
) -> None:
    items: list[tuple[Any, Any]]
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, list | tuple):
        items = list(enumerate(value))
    else:
        items = []
    if not items:
        if block.inverse is not None:
            render_program(block.inverse, frame, missing, out)
        return
    last = len(items) - 1
    for index, (key, item) in enumerate(items):
        data = {
            **frame.data,
            "index": index,
            "key": key,
            "first": index == 0,
            "last": index == last,
        }
        render_program(block.program, Frame(item, frame, data), missing, out)


def _is_lookup_path(path: str) -> bool:
    return path in ("this", ".") or bool(
        re.fullmatch(
            r"(@?(\.\./)*)?(this[./])?(" + ID + r"|\[[^\]]*\])([./](" + ID + r"|\[[^\]]*\]))*",
            path,
        )
    )


def _param_value(param: str, frame: Frame) -> Any:
    if len(param) >= 2 and param[0] == param[-1] and param[0] in "\"'":
        return param[1:-1]
    if param == "true":
        return True
    if param == "false":
        return False
    if param in ("null", "undefined"):
        return None
    if re.fullmatch(r"-?\d+(\.\d+)?", param):
        number = float(param)
        return int(number) if number.is_integer() else number
    return _lookup(param, frame)


def _lookup(path: str, frame: Frame) -> Any:
    if path.startswith("@"):
        name = path[1:]
        if name.startswith("root"):
            root = frame
            while root.parent is not None:
                root = root.parent
            rest = name[4:].lstrip("./")
            return _walk(root.value, rest.replace("/", ".").split(".")) if rest else root.value
        return frame.data.get(name)
    current = frame
    while path.startswith("../"):
        path = path[3:]
        current = current.parent if current.parent is not None else current
    if path in ("this", "."):
        return current.value
    for prefix in ("this.", "this/", "./"):
        if path.startswith(prefix):
            path = path[len(prefix) :]
    segments = [s[1:-1] if s.startswith("[") else s for s in re.split(r"[./]", path)]
    return _walk(current.value, segments)


def _walk(value: Any, segments: Sequence[str]) -> Any:
    for segment in segments:
        if isinstance(value, Mapping):
            value = value.get(segment)
        elif isinstance(value, list | tuple) and segment.isdigit() and int(segment) < len(value):
            value = value[int(segment)]
        elif isinstance(value, str | list | tuple) and segment == "length":
            value = js_length(value) if isinstance(value, str) else len(value)
        else:
            return None
        if value is None:
            return None
    return value


def _js_truthy(value: Any) -> bool:
    if value is None or value is False:
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0 and not (isinstance(value, float) and math.isnan(value))
    if isinstance(value, str):
        return value != ""
    return True


def _is_empty(value: Any) -> bool:
    # Handlebars `isEmpty`: falsy but not 0, or an empty array.
    if isinstance(value, list | tuple):
        return len(value) == 0
    return not _js_truthy(value) and not (
        isinstance(value, int | float) and not isinstance(value, bool) and value == 0
    )
