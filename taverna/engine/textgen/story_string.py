"""The context template's story string: a Handlebars template rendered without escaping.

SillyTavern compiles the story string with the Handlebars library (no HTML
escaping), then runs the macro engine over the result (algo-prompt-assembly.md
§6.2, formats-presets.md §3.1). This module is a re-implementation of the part of
Handlebars a story string can use: `{{x}}`, `{{{x}}}`, `{{#if}}`, `{{#unless}}`,
`{{else}}` (and `{{else if}}`), `{{#each}}`, `{{#with}}`, comments, `~` whitespace
control and Handlebars' "standalone line" rule, which drops a line that holds only a
block tag. A name the template does not define (`{{original}}`, `{{random::a::b}}`)
is handed to the macro engine, as SillyTavern's `helperMissing` does; `{{trim}}`
stays in the text for the macro pass.

The template is parsed once into a tree (`parse_story_string`, cacheable) and then
rendered with the turn's values; nothing in it runs code.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from taverna.engine.macros.js import js_text
from taverna.engine.tokens.base import js_length
from taverna.errors import FormatError

MacroHook = Callable[[str], str]

# Handlebars' identifier: anything but whitespace and these characters.
_ID = r"""[^\s!"#%-,\.\/;->@\[-\^`\{-~]+"""
_ID_RE = re.compile(_ID)


# --------------------------------------------------------------------- tree


@dataclass(slots=True)
class _Content:
    original: str
    value: str
    left_stripped: bool = False
    right_stripped: bool = False


@dataclass(frozen=True, slots=True)
class _Strip:
    open: bool = False  # `{{~`: strip whitespace before the tag
    close: bool = False  # `~}}`: strip whitespace after the tag


@dataclass(slots=True)
class _Mustache:
    path: str
    params: tuple[str, ...]
    strip: _Strip


@dataclass(slots=True)
class _Comment:
    strip: _Strip


@dataclass(slots=True)
class _Program:
    body: list[_Node] = field(default_factory=list)


@dataclass(slots=True)
class _Block:
    helper: str
    params: tuple[str, ...]
    hash: dict[str, str]
    program: _Program
    inverse: _Program | None
    open_strip: _Strip
    inverse_strip: _Strip = _Strip()
    close_strip: _Strip = _Strip()
    chained: bool = False  # an `{{else if}}` continuation: its close is the parent's
    name: str = ""  # the name its closing tag must repeat
    inverted: bool = False  # opened with `{{^x}}`: the body is the inverse


_Node = _Content | _Mustache | _Comment | _Block


@dataclass(frozen=True, slots=True)
class StoryTemplate:
    """A parsed story string, ready to render with the turn's values."""

    source: str
    _program: _Program = field(repr=False, compare=False)

    def render(self, values: Mapping[str, Any], missing: MacroHook | None = None) -> str:
        """The template's text for these values.

        `missing` resolves a name the values do not define; it gets `{{name}}` and
        returns its text (SillyTavern passes it to the macro engine). Without it the
        tag is left as written.
        """
        hook = missing if missing is not None else (lambda text: text)
        out: list[str] = []
        _render_program(self._program, _Frame(values, None, {}), hook, out)
        return "".join(out)


# ------------------------------------------------------------------ parsing


@dataclass(frozen=True, slots=True)
class _Tag:
    kind: str  # mustache | raw | open | inverse_open | close | else | comment
    text: str
    strip: _Strip
    position: int


def _tokens(template: str) -> list[str | _Tag]:
    items: list[str | _Tag] = []
    text: list[str] = []
    i = 0
    n = len(template)
    while i < n:
        start = template.find("{{", i)
        if start < 0:
            text.append(template[i:])
            break
        # `\{{` is a literal `{{` in Handlebars.
        if start > 0 and template[start - 1] == "\\":
            text.append(template[i : start - 1] + "{{")
            i = start + 2
            continue
        text.append(template[i:start])
        tag, i = _read_tag(template, start)
        if text:
            items.append("".join(text))
            text = []
        items.append(tag)
    if text:
        items.append("".join(text))
    return [item for item in items if item != ""]


def _read_tag(template: str, start: int) -> tuple[_Tag, int]:
    i = start + 2
    triple = template.startswith("{", i)
    if triple:
        i += 1
    strip_open = template.startswith("~", i)
    if strip_open:
        i += 1
    if not triple and template.startswith("!--", i):
        end = template.find("--", i + 3)
        while end >= 0:
            after = end + 2
            if template.startswith("~}}", after):
                return _Tag("comment", "", _Strip(strip_open, True), start), after + 3
            if template.startswith("}}", after):
                return _Tag("comment", "", _Strip(strip_open, False), start), after + 2
            end = template.find("--", end + 1)
        raise _error("a comment `{{!--` is never closed", start)
    if not triple and template.startswith("!", i):
        end = template.find("}}", i)
        if end < 0:
            raise _error("a comment `{{!` is never closed", start)
        return _Tag("comment", "", _Strip(strip_open, template[end - 1] == "~"), start), end + 2
    closer = "}}}" if triple else "}}"
    end = template.find(closer, i)
    if end < 0:
        raise _error("a tag `{{` is never closed", start)
    inner = template[i:end]
    strip_close = inner.endswith("~")
    if strip_close:
        inner = inner[:-1]
    inner = inner.strip()
    strip = _Strip(strip_open, strip_close)
    stop = end + len(closer)
    if triple:
        return _Tag("raw", inner, strip, start), stop
    if inner.startswith("#"):
        return _Tag("open", inner[1:].strip(), strip, start), stop
    if inner.startswith("^"):
        body = inner[1:].strip()
        return _Tag("else" if not body else "inverse_open", body, strip, start), stop
    if inner.startswith("/"):
        return _Tag("close", inner[1:].strip(), strip, start), stop
    if inner == "else" or inner.startswith("else "):
        return _Tag("else", inner[4:].strip(), strip, start), stop
    if inner.startswith("&"):
        return _Tag("raw", inner[1:].strip(), strip, start), stop
    if inner.startswith(">"):
        raise _error("partials (`{{>`) are not supported in a story string", start)
    return _Tag("mustache", inner, strip, start), stop


def _error(message: str, position: int) -> FormatError:
    return FormatError(
        f"story string: {message} (at character {position})",
        field="story_string",
        code="story_string_at_character",
        params={"message_name": str(message), "position": str(position)},
    )


def _split_expression(text: str, position: int) -> tuple[str, tuple[str, ...], dict[str, str]]:
    parts: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if ch in "\"'":
            end = text.find(ch, i + 1)
            if end < 0:
                raise _error("a string in a tag is never closed", position)
            parts.append(text[i : end + 1])
            i = end + 1
            continue
        if ch == "(":
            raise _error("sub-expressions `( )` are not supported in a story string", position)
        j = i
        while j < n and not text[j].isspace():
            if text[j] in "\"'" and j > i and text[j - 1] == "=":
                end = text.find(text[j], j + 1)
                if end < 0:
                    raise _error("a string in a tag is never closed", position)
                j = end + 1
                continue
            j += 1
        parts.append(text[i:j])
        i = j
    if not parts:
        raise _error("an empty tag `{{}}`", position)
    params: list[str] = []
    hashes: dict[str, str] = {}
    for part in parts[1:]:
        key, sep, value = part.partition("=")
        if sep and _ID_RE.fullmatch(key):
            hashes[key] = value
        else:
            params.append(part)
    return parts[0], tuple(params), hashes


def _parse(template: str) -> _Program:
    root = _Program()
    # Each open block: (block, the program being filled, open tag position).
    stack: list[tuple[_Block, _Program, int]] = []
    current = root
    for item in _tokens(template):
        if isinstance(item, str):
            current.body.append(_Content(item, item))
            continue
        tag = item
        if tag.kind == "comment":
            current.body.append(_Comment(tag.strip))
        elif tag.kind in ("mustache", "raw"):
            path, params, _ = _split_expression(tag.text, tag.position)
            current.body.append(_Mustache(path, params, tag.strip))
        elif tag.kind in ("open", "inverse_open"):
            helper, params, hashes = _split_expression(tag.text, tag.position)
            block = _Block(helper, params, hashes, _Program(), None, tag.strip, name=helper)
            if tag.kind == "inverse_open":
                # `{{^x}}...{{/x}}`: the same helper, with the body as its inverse.
                block.inverse, block.program = block.program, _Program()
                block.inverted = True
                current.body.append(block)
                stack.append((block, block.inverse, tag.position))
                current = block.inverse
                continue
            current.body.append(block)
            stack.append((block, block.program, tag.position))
            current = block.program
        elif tag.kind == "else":
            if not stack:
                raise _error("`{{else}}` outside a block", tag.position)
            block, _, opened = stack[-1]
            if block.inverse is not None and current is block.inverse:
                raise _error("a second `{{else}}` in one block", tag.position)
            block.inverse_strip = tag.strip
            block.inverse = _Program()
            if tag.text:
                # `{{else if x}}`: a nested block inside the inverse, closed by the same `{{/if}}`.
                helper, params, hashes = _split_expression(tag.text, tag.position)
                chained = _Block(helper, params, hashes, _Program(), None, tag.strip, chained=True)
                block.inverse.body.append(chained)
                stack.append((chained, chained.program, opened))
                current = chained.program
            else:
                current = block.inverse
        else:  # close
            if not stack:
                raise _error(f"`{{{{/{tag.text}}}}}` closes no block", tag.position)
            while True:
                block, _, opened = stack.pop()
                block.close_strip = tag.strip
                if not block.chained:
                    break
            if block.name != tag.text:
                raise _error(
                    f"`{{{{#{block.name}}}}}` is closed by `{{{{/{tag.text}}}}}`", tag.position
                )
            current = _innermost(stack[-1]) if stack else root
    if stack:
        raise _error(f"`{{{{#{stack[-1][0].name}}}}}` is never closed", stack[-1][2])
    _strip_whitespace(root, is_root=True)
    return root


def _innermost(entry: tuple[_Block, _Program, int]) -> _Program:
    block = entry[0]
    return block.inverse if block.inverse is not None else block.program


@lru_cache(maxsize=64)
def parse_story_string(template: str) -> StoryTemplate:
    """The parsed story string; raises `FormatError` (field `story_string`) if malformed."""
    return StoryTemplate(template, _parse(template))


def render_story_template(
    template: str, values: Mapping[str, Any], missing: MacroHook | None = None
) -> str:
    """Parse (cached) and render a story string in one step."""
    return parse_story_string(template).render(values, missing)


# ---------------------------------------------- Handlebars' whitespace rules


_PREV_WS = re.compile(r"\r?\n\s*?\Z")
_PREV_WS_ROOT_START = re.compile(r"(^|\r?\n)\s*?\Z")
_NEXT_WS = re.compile(r"^\s*?\r?\n")
_NEXT_WS_ROOT_END = re.compile(r"^\s*?(\r?\n|\Z)")


def _is_prev_ws(body: list[_Node], i: int | None = None, is_root: bool = False) -> bool:
    if i is None:
        i = len(body)
    prev = body[i - 1] if i - 1 >= 0 else None
    prev2 = body[i - 2] if i - 2 >= 0 else None
    if prev is None:
        return is_root
    if isinstance(prev, _Content):
        pattern = _PREV_WS if (prev2 is not None or not is_root) else _PREV_WS_ROOT_START
        return pattern.search(prev.original) is not None
    return False


def _is_next_ws(body: list[_Node], i: int | None = None, is_root: bool = False) -> bool:
    if i is None:
        i = -1
    nxt = body[i + 1] if i + 1 < len(body) else None
    nxt2 = body[i + 2] if i + 2 < len(body) else None
    if nxt is None:
        return is_root
    if isinstance(nxt, _Content):
        pattern = _NEXT_WS if (nxt2 is not None or not is_root) else _NEXT_WS_ROOT_END
        return pattern.search(nxt.original) is not None
    return False


def _omit_right(body: list[_Node], i: int | None = None, multiple: bool = False) -> None:
    index = 0 if i is None else i + 1
    current = body[index] if 0 <= index < len(body) else None
    if not isinstance(current, _Content) or (not multiple and current.right_stripped):
        return
    before = current.value
    current.value = re.sub(r"^\s+" if multiple else r"^[ \t]*\r?\n?", "", current.value)
    current.right_stripped = current.value != before


def _omit_left(body: list[_Node], i: int | None = None, multiple: bool = False) -> bool:
    index = len(body) - 1 if i is None else i - 1
    current = body[index] if 0 <= index < len(body) else None
    if not isinstance(current, _Content) or (not multiple and current.left_stripped):
        return False
    before = current.value
    current.value = re.sub(r"\s+\Z" if multiple else r"[ \t]+\Z", "", current.value)
    current.left_stripped = current.value != before
    return current.left_stripped


@dataclass(frozen=True, slots=True)
class _StripInfo:
    open: bool = False
    close: bool = False
    open_standalone: bool = False
    close_standalone: bool = False
    inline_standalone: bool = False


def _visit_block(block: _Block) -> _StripInfo:
    _strip_whitespace(block.program, is_root=False)
    if block.inverse is not None:
        _strip_whitespace(block.inverse, is_root=False)
    # Handlebars keeps no program for `{{^x}}`: its body stands in for it.
    program = block.inverse if block.inverted and block.inverse is not None else block.program
    inverse = None if block.inverted else block.inverse
    first_inverse = inverse
    last_inverse = inverse
    if inverse is not None and _chained(inverse):
        first_inverse = _chained_block(inverse).program
        # As Handlebars walks it: into each chained block's program.
        while last_inverse is not None and _chained(last_inverse):
            last_inverse = _chained_block(last_inverse).program
    info = _StripInfo(
        open=block.open_strip.open,
        close=block.close_strip.close,
        open_standalone=_is_next_ws(program.body),
        close_standalone=_is_prev_ws((last_inverse or program).body),
    )
    if block.open_strip.close:
        _omit_right(program.body, None, True)
    if inverse is not None and first_inverse is not None and last_inverse is not None:
        if block.inverse_strip.open:
            _omit_left(program.body, None, True)
        if block.inverse_strip.close:
            _omit_right(first_inverse.body, None, True)
        if block.close_strip.open:
            _omit_left(last_inverse.body, None, True)
        # A standalone `{{else}}` line disappears with its newline.
        if _is_prev_ws(program.body) and _is_next_ws(first_inverse.body):
            _omit_left(program.body)
            _omit_right(first_inverse.body)
    elif block.close_strip.open:
        _omit_left(program.body, None, True)
    return info


def _chained(program: _Program) -> bool:
    return (
        len(program.body) == 1 and isinstance(program.body[0], _Block) and program.body[0].chained
    )


def _chained_block(program: _Program) -> _Block:
    block = program.body[0]
    assert isinstance(block, _Block)
    return block


def _strip_whitespace(program: _Program, is_root: bool) -> None:
    body = program.body
    for i, node in enumerate(body):
        if isinstance(node, _Content):
            continue
        if isinstance(node, _Mustache):
            info = _StripInfo(open=node.strip.open, close=node.strip.close)
        elif isinstance(node, _Comment):
            info = _StripInfo(open=node.strip.open, close=node.strip.close, inline_standalone=True)
        else:
            info = _visit_block(node)
        prev_ws = _is_prev_ws(body, i, is_root)
        next_ws = _is_next_ws(body, i, is_root)
        if info.close:
            _omit_right(body, i, True)
        if info.open:
            _omit_left(body, i, True)
        if info.inline_standalone and prev_ws and next_ws:
            _omit_right(body, i)
            _omit_left(body, i)
        if isinstance(node, _Block):
            main = node.program if not node.inverted else (node.inverse or node.program)
            if info.open_standalone and prev_ws:
                _omit_right(main.body)
                _omit_left(body, i)
            if info.close_standalone and next_ws:
                _omit_right(body, i)
                _omit_left((node.inverse or node.program).body)


# ---------------------------------------------------------------- rendering


@dataclass(frozen=True, slots=True)
class _Frame:
    value: Any
    parent: _Frame | None
    data: Mapping[str, Any]


def _render_program(program: _Program, frame: _Frame, missing: MacroHook, out: list[str]) -> None:
    for node in program.body:
        if isinstance(node, _Content):
            out.append(node.value)
        elif isinstance(node, _Comment):
            continue
        elif isinstance(node, _Mustache):
            out.append(_render_mustache(node, frame, missing))
        else:
            _render_block(node, frame, missing, out)


def _render_mustache(node: _Mustache, frame: _Frame, missing: MacroHook) -> str:
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
        if _ID_RE.fullmatch(name):
            return missing("{{" + name + "}}")
        return ""
    return js_text(value)


def _render_block(block: _Block, frame: _Frame, missing: MacroHook, out: list[str]) -> None:
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
            _render_program(chosen, frame, missing, out)
        return
    if helper == "with":
        value = _param_value(block.params[0], frame) if block.params else None
        if not _is_empty(value) and _js_truthy(value):
            _render_program(block.program, _Frame(value, frame, frame.data), missing, out)
        elif block.inverse is not None:
            _render_program(block.inverse, frame, missing, out)
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
        _render_program(block.program, frame, missing, out)
    elif value is None or value is False:
        if block.inverse is not None:
            _render_program(block.inverse, frame, missing, out)
    elif isinstance(value, list | tuple):
        _render_each(block, value, frame, missing, out)
    else:
        _render_program(block.program, _Frame(value, frame, frame.data), missing, out)


def _render_each(
    block: _Block, value: Any, frame: _Frame, missing: MacroHook, out: list[str]
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
            _render_program(block.inverse, frame, missing, out)
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
        _render_program(block.program, _Frame(item, frame, data), missing, out)


def _is_lookup_path(path: str) -> bool:
    return path in ("this", ".") or bool(
        re.fullmatch(
            r"(@?(\.\./)*)?(this[./])?(" + _ID + r"|\[[^\]]*\])([./](" + _ID + r"|\[[^\]]*\]))*",
            path,
        )
    )


def _param_value(param: str, frame: _Frame) -> Any:
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


def _lookup(path: str, frame: _Frame) -> Any:
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
