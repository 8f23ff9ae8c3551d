"""Handlebars' whitespace rules: `~` strips the whitespace beside a tag, and a line that
holds only a block tag (a "standalone" line) disappears with its line break."""

from __future__ import annotations

import re
from dataclasses import dataclass

from taverna.engine.textgen.story_string.tree import (
    Block,
    Comment,
    Content,
    Mustache,
    Node,
    Program,
)

_PREV_WS = re.compile(r"\r?\n\s*?\Z")
_PREV_WS_ROOT_START = re.compile(r"(^|\r?\n)\s*?\Z")
_NEXT_WS = re.compile(r"^\s*?\r?\n")
_NEXT_WS_ROOT_END = re.compile(r"^\s*?(\r?\n|\Z)")


def _is_prev_ws(body: list[Node], i: int | None = None, is_root: bool = False) -> bool:
    if i is None:
        i = len(body)
    prev = body[i - 1] if i - 1 >= 0 else None
    prev2 = body[i - 2] if i - 2 >= 0 else None
    if prev is None:
        return is_root
    if isinstance(prev, Content):
        pattern = _PREV_WS if (prev2 is not None or not is_root) else _PREV_WS_ROOT_START
        return pattern.search(prev.original) is not None
    return False


def _is_next_ws(body: list[Node], i: int | None = None, is_root: bool = False) -> bool:
    if i is None:
        i = -1
    nxt = body[i + 1] if i + 1 < len(body) else None
    nxt2 = body[i + 2] if i + 2 < len(body) else None
    if nxt is None:
        return is_root
    if isinstance(nxt, Content):
        pattern = _NEXT_WS if (nxt2 is not None or not is_root) else _NEXT_WS_ROOT_END
        return pattern.search(nxt.original) is not None
    return False


def _omit_right(body: list[Node], i: int | None = None, multiple: bool = False) -> None:
    index = 0 if i is None else i + 1
    current = body[index] if 0 <= index < len(body) else None
    if not isinstance(current, Content) or (not multiple and current.right_stripped):
        return
    before = current.value
    current.value = re.sub(r"^\s+" if multiple else r"^[ \t]*\r?\n?", "", current.value)
    current.right_stripped = current.value != before


def _omit_left(body: list[Node], i: int | None = None, multiple: bool = False) -> bool:
    index = len(body) - 1 if i is None else i - 1
    current = body[index] if 0 <= index < len(body) else None
    if not isinstance(current, Content) or (not multiple and current.left_stripped):
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


def _visit_block(block: Block) -> _StripInfo:
    strip_whitespace(block.program, is_root=False)
    if block.inverse is not None:
        strip_whitespace(block.inverse, is_root=False)
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


def _chained(program: Program) -> bool:
    return len(program.body) == 1 and isinstance(program.body[0], Block) and program.body[0].chained


def _chained_block(program: Program) -> Block:
    block = program.body[0]
    assert isinstance(block, Block)
    return block


def strip_whitespace(program: Program, is_root: bool) -> None:
    """Apply the `~` marks and the standalone-line rule to a parsed program, in place."""
    body = program.body
    for i, node in enumerate(body):
        if isinstance(node, Content):
            continue
        if isinstance(node, Mustache):
            info = _StripInfo(open=node.strip.open, close=node.strip.close)
        elif isinstance(node, Comment):
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
        if isinstance(node, Block):
            main = node.program if not node.inverted else (node.inverse or node.program)
            if info.open_standalone and prev_ws:
                _omit_right(main.body)
                _omit_left(body, i)
            if info.close_standalone and next_ws:
                _omit_right(body, i)
                _omit_left((node.inverse or node.program).body)
