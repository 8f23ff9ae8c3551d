"""A story string's text parsed into its tree, with Handlebars' whitespace rules applied."""

from __future__ import annotations

from dataclasses import dataclass

from taverna.engine.textgen.story_string.standalone import strip_whitespace
from taverna.engine.textgen.story_string.tree import (
    ID_RE,
    Block,
    Comment,
    Content,
    Mustache,
    Program,
    Strip,
)
from taverna.errors import FormatError


@dataclass(frozen=True, slots=True)
class _Tag:
    kind: str  # mustache | raw | open | inverse_open | close | else | comment
    text: str
    strip: Strip
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
                return _Tag("comment", "", Strip(strip_open, True), start), after + 3
            if template.startswith("}}", after):
                return _Tag("comment", "", Strip(strip_open, False), start), after + 2
            end = template.find("--", end + 1)
        raise _error("a comment `{{!--` is never closed", start)
    if not triple and template.startswith("!", i):
        end = template.find("}}", i)
        if end < 0:
            raise _error("a comment `{{!` is never closed", start)
        return _Tag("comment", "", Strip(strip_open, template[end - 1] == "~"), start), end + 2
    closer = "}}}" if triple else "}}"
    end = template.find(closer, i)
    if end < 0:
        raise _error("a tag `{{` is never closed", start)
    inner = template[i:end]
    strip_close = inner.endswith("~")
    if strip_close:
        inner = inner[:-1]
    inner = inner.strip()
    strip = Strip(strip_open, strip_close)
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
        if sep and ID_RE.fullmatch(key):
            hashes[key] = value
        else:
            params.append(part)
    return parts[0], tuple(params), hashes


def parse(template: str) -> Program:
    """The tree of a story string, its whitespace stripped as Handlebars strips it; a
    malformed template raises FormatError naming the place."""
    root = Program()
    # Each open block: (block, the program being filled, open tag position).
    stack: list[tuple[Block, Program, int]] = []
    current = root
    for item in _tokens(template):
        if isinstance(item, str):
            current.body.append(Content(item, item))
            continue
        tag = item
        if tag.kind == "comment":
            current.body.append(Comment(tag.strip))
        elif tag.kind in ("mustache", "raw"):
            path, params, _ = _split_expression(tag.text, tag.position)
            current.body.append(Mustache(path, params, tag.strip))
        elif tag.kind in ("open", "inverse_open"):
            helper, params, hashes = _split_expression(tag.text, tag.position)
            block = Block(helper, params, hashes, Program(), None, tag.strip, name=helper)
            if tag.kind == "inverse_open":
                # `{{^x}}...{{/x}}`: the same helper, with the body as its inverse.
                block.inverse, block.program = block.program, Program()
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
            block.inverse = Program()
            if tag.text:
                # `{{else if x}}`: a nested block inside the inverse, closed by the same `{{/if}}`.
                helper, params, hashes = _split_expression(tag.text, tag.position)
                chained = Block(helper, params, hashes, Program(), None, tag.strip, chained=True)
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
    strip_whitespace(root, is_root=True)
    return root


def _innermost(entry: tuple[Block, Program, int]) -> Program:
    block = entry[0]
    return block.inverse if block.inverse is not None else block.program
