"""The parsed story string: a Handlebars program of text, tags, comments and blocks."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Handlebars' identifier: anything but whitespace and these characters.
ID = r"""[^\s!"#%-,\.\/;->@\[-\^`\{-~]+"""
ID_RE = re.compile(ID)


@dataclass(slots=True)
class Content:
    """Text between tags: as written (`original`, what the standalone rules look at) and
    as it will print (`value`, after stripping)."""

    original: str
    value: str
    left_stripped: bool = False
    right_stripped: bool = False


@dataclass(frozen=True, slots=True)
class Strip:
    """The `~` marks of a tag."""

    open: bool = False  # `{{~`: strip whitespace before the tag
    close: bool = False  # `~}}`: strip whitespace after the tag


@dataclass(slots=True)
class Mustache:
    """A `{{value}}` tag (or `{{{value}}}`: the same, nothing is escaped)."""

    path: str
    params: tuple[str, ...]
    strip: Strip


@dataclass(slots=True)
class Comment:
    """A `{{! ... }}` comment: prints nothing, but counts for the whitespace rules."""

    strip: Strip


@dataclass(slots=True)
class Program:
    """A sequence of nodes: the template, or the body of a block."""

    body: list[Node] = field(default_factory=list)


@dataclass(slots=True)
class Block:
    """A `{{#helper ...}}...{{else}}...{{/helper}}` block."""

    helper: str
    params: tuple[str, ...]
    hash: dict[str, str]
    program: Program
    inverse: Program | None
    open_strip: Strip
    inverse_strip: Strip = Strip()
    close_strip: Strip = Strip()
    chained: bool = False  # an `{{else if}}` continuation: its close is the parent's
    name: str = ""  # the name its closing tag must repeat
    inverted: bool = False  # opened with `{{^x}}`: the body is the inverse


Node = Content | Mustache | Comment | Block
