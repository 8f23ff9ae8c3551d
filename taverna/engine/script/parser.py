"""Reading STscript text into closures of commands (algo-chat-ops.md §9.1).

A script is a closure without braces: commands separated by `|`, each `/name`, then
named arguments `key=value`, then the unnamed argument. Values are plain words,
`"quoted text"`, `[lists]` or closures `{: ... :}` (run at once with `{: ... :}()`).
`||` between two commands keeps the first one's result out of the second's unnamed
argument. Comments are `// ...` and `/# ...` up to the next `|`, or `/* ... *|`.

The parser only needs to know, per command, whether its unnamed argument is split into
words (`/if`, `/times`, `/let` ...) and how many; `CommandShape` carries that.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from taverna.engine.script.errors import ScriptError

__all__ = [
    "ClosureNode",
    "CommandShape",
    "Executor",
    "NamedArgument",
    "Script",
    "parse",
]

_NAMED = re.compile(r"\w+=")
# `/parser-flag NAME on|off` (algo-chat-ops.md §9.1).
STRICT_ESCAPING = "STRICT_ESCAPING"
REPLACE_GETVAR = "REPLACE_GETVAR"
PARSER_FLAGS = (STRICT_ESCAPING, REPLACE_GETVAR)
# A backslash before one of these takes it literally (SillyTavern's default,
# non-strict escaping): `\|` is a bar, not the end of a command.
_ESCAPABLE = ("|", "{:", ":}", '"', "[", "]")
# Inside an unquoted unnamed argument SillyTavern 1.12.6 (strict escaping) looks only for
# the command's end and closures: past its first character a `\"` stays as written.
_IN_TEXT = ("|", "{:", ":}")


@dataclass(frozen=True, slots=True)
class CommandShape:
    """How a command's unnamed argument is read: whole, or split into words."""

    split: bool = False
    split_count: int | None = None


@dataclass(slots=True)
class NamedArgument:
    name: str
    value: str | ClosureNode
    start: int


@dataclass(slots=True)
class Executor:
    """One command as written: its name, where it is, and its arguments.

    `kind` is `command`, `break` (`/break`) or `run` (the `/:name` shorthand).
    """

    name: str
    start: int
    end: int = 0
    kind: str = "command"
    named: list[NamedArgument] = field(default_factory=list)
    unnamed: list[str | ClosureNode] = field(default_factory=list)
    inject_pipe: bool = True
    flags: frozenset[str] = frozenset()


@dataclass(slots=True)
class ClosureNode:
    """A closure as written: its parameters with defaults, its commands, its text."""

    start: int
    parameters: list[NamedArgument] = field(default_factory=list)
    executors: list[Executor] = field(default_factory=list)
    raw_text: str = ""
    execute_now: bool = False


@dataclass(frozen=True, slots=True)
class Script:
    """A parsed script: the root closure and the text it came from (for positions)."""

    root: ClosureNode
    text: str


def parse(
    text: str,
    shape_of: Callable[[str], CommandShape | None],
    *,
    max_depth: int = 200,
    flags: frozenset[str] = frozenset(),
) -> Script:
    """Parse `text`; `shape_of(name)` is None for a command that does not exist. `flags`:
    the parser flags on at the start (`/parser-flag` changes them from where it stands)."""
    parser = _Parser(text, shape_of, max_depth)
    parser.flags = set(flags)
    return Script(parser.script(), text)


class _Parser:
    def __init__(
        self, text: str, shape_of: Callable[[str], CommandShape | None], max_depth: int
    ) -> None:
        self.text = text
        self.index = 0
        self.shape_of = shape_of
        self.depth = 0
        self.max_depth = max_depth
        self.flags: set[str] = set()

    # ------------------------------------------------------------------ reading

    def error(self, message: str, index: int | None = None, command: str | None = None) -> None:
        raise ScriptError.at(message, self.text, self.index if index is None else index, command)

    @property
    def end_of_text(self) -> bool:
        return self.index >= len(self.text)

    def at(self, sequence: str, offset: int = 0) -> bool:
        return self.text.startswith(sequence, self.index + offset)

    def at_space(self) -> bool:
        return not self.end_of_text and self.text[self.index].isspace()

    def take(self, *, spaces: bool = False, symbols: tuple[str, ...] = _ESCAPABLE) -> str:
        """One character, or the character after an escaping backslash.

        `spaces`: a backslash also escapes whitespace (inside a word value); `symbols`: what
        a backslash escapes here under strict escaping."""
        char = self.text[self.index]
        if char == "\\" and STRICT_ESCAPING in self.flags:
            # Strict: before a symbol, each pair of backslashes is one backslash, and an
            # odd one left over makes the symbol literal (else the symbol still works).
            end = self.index
            while end < len(self.text) and self.text[end] == "\\":
                end += 1
            if self.text.startswith(symbols, end):
                run = end - self.index
                self.index = end
                if run % 2:
                    self.index += 1
                    return "\\" * (run // 2) + self.text[end]
                return "\\" * (run // 2)
        if char == "\\" and self.index + 1 < len(self.text):
            after = self.text[self.index + 1]
            escapable = symbols if STRICT_ESCAPING in self.flags else _ESCAPABLE
            if self.text.startswith(escapable, self.index + 1) or (spaces and after.isspace()):
                self.index += 2
                return after
        self.index += 1
        return char

    def skip_space(self) -> None:
        while self.at_space():
            self.index += 1

    # -------------------------------------------------------------- structure

    def script(self) -> ClosureNode:
        return self.closure(root=True)

    def closure_end(self, root: bool) -> bool:
        if root:
            return self.end_of_text
        if self.end_of_text:
            self.error("unclosed closure: `{:` without `:}`")
        return self.at(":}")

    def command_end(self, root: bool) -> bool:
        return self.closure_end(root) or self.at("|")

    def closure(self, *, root: bool) -> ClosureNode:
        start = self.index
        self.depth += 1
        if self.depth > self.max_depth:
            self.error(f"closures nested deeper than {self.max_depth}")
        if not root:
            self.index += 2  # "{:"
        node = ClosureNode(start=start)
        body_start = self.index
        self.skip_space()
        while self.at_named():
            node.parameters.append(self.named_argument(root=root))
            self.skip_space()
        inject_pipe = True
        while not self.closure_end(root):
            if self.at("/*"):
                self.block_comment()
            elif self.at("//") or self.at("/#"):
                self.comment(root)
            elif self.at("/parser-flag "):
                self.parser_flag(root)
            elif self.at("/:") and not self.at(":}", 1):
                node.executors.append(self.run_shorthand(root))
                inject_pipe = True
            elif self.at_break():
                node.executors.append(self.break_(root))
            elif self.at("/"):
                executor = self.command(root)
                executor.inject_pipe = inject_pipe
                node.executors.append(executor)
                inject_pipe = True
            else:
                # Text that is not a command is ignored, up to the next command.
                while not self.command_end(root):
                    self.take()
            self.skip_space()
            if self.at("|"):
                self.index += 1
                if self.at("|"):
                    inject_pipe = False
                    self.index += 1
            self.skip_space()
        node.raw_text = self.text[body_start : self.index]
        if not root:
            self.index += 2  # ":}"
            if self.at("()"):
                self.index += 2
                node.execute_now = True
        self.depth -= 1
        return node

    def at_break(self) -> bool:
        if not self.at("/break"):
            return False
        after = self.index + len("/break")
        return after >= len(self.text) or self.text[after].isspace() or self.text[after] == "|"

    def block_comment(self) -> None:
        start = self.index
        self.index += 2
        while not self.at("*|"):
            if self.end_of_text:
                self.error("unclosed block comment: `/*` without `*|`", start)
            if self.at("/*"):
                self.block_comment()
            else:
                self.index += 1
        self.index += 2

    def comment(self, root: bool) -> None:
        self.index += 2
        while not self.end_of_text and not self.command_end(root):
            self.take()

    def parser_flag(self, root: bool) -> None:
        self.index += len("/parser-flag ")
        values = [
            v for v in self.unnamed_argument(root, CommandShape(split=True)) if isinstance(v, str)
        ]
        if not values or values[0] not in PARSER_FLAGS:
            return  # SillyTavern ignores a flag it does not know
        state = values[1].strip().lower() if len(values) > 1 else "on"
        if state in ("on", "true", "1"):
            self.flags.add(values[0])
        else:
            self.flags.discard(values[0])

    def run_shorthand(self, root: bool) -> Executor:
        executor = Executor(name=":", start=self.index, kind="run")
        self.index += 2
        name = self.quoted_value() if self.at('"') else self.plain_value(root)
        executor.unnamed = [name]
        self.skip_space()
        while self.at_named():
            executor.named.append(self.named_argument(root=root))
            self.skip_space()
        if not self.command_end(root):
            self.error("unexpected text after `/:name` (it takes named arguments only)")
        executor.end = self.index
        return executor

    def break_(self, root: bool) -> Executor:
        executor = Executor(name="break", start=self.index, kind="break")
        self.index += len("/break")
        self.skip_space()
        if not self.command_end(root):
            executor.unnamed = self.unnamed_argument(root, CommandShape())
        executor.end = self.index
        return executor

    def command(self, root: bool) -> Executor:
        executor = Executor(name="", start=self.index, flags=frozenset(self.flags))
        self.index += 1
        name_start = self.index
        while not self.end_of_text and not self.at_space() and not self.command_end(root):
            self.index += 1
        executor.name = self.text[name_start : self.index]
        shape = self.shape_of(executor.name)
        if shape is None:
            if executor.name:
                self.error(f"unknown command /{executor.name} (see /help)", name_start - 1)
            self.error("a command name must follow `/`", name_start - 1)
        assert shape is not None
        self.skip_space()
        while self.at_named():
            executor.named.append(self.named_argument(root=root))
            self.skip_space()
        if not self.command_end(root):
            executor.unnamed = self.unnamed_argument(root, shape)
        executor.end = self.index
        return executor

    # --------------------------------------------------------------- arguments

    def at_named(self) -> bool:
        return _NAMED.match(self.text, self.index) is not None

    def named_argument(self, *, root: bool) -> NamedArgument:
        start = self.index
        match = _NAMED.match(self.text, self.index)
        assert match is not None
        name = match.group()[:-1]
        self.index = match.end()
        value: str | ClosureNode
        if self.at("{:"):
            value = self.closure(root=False)
        elif self.at('"'):
            value = self.quoted_value()
        elif self.at("["):
            value = self.list_value()
        elif not self.end_of_text and not self.at_space():
            value = self.plain_value(root)
        else:
            value = ""
        return NamedArgument(name=name, value=value, start=start)

    def quoted_value(self) -> str:
        start = self.index
        self.index += 1
        value = []
        while True:
            if self.end_of_text:
                self.error("unclosed quoted value", start)
            if self.at('"'):
                break
            strict = STRICT_ESCAPING in self.flags
            if not strict and (self.at("|") or (self.depth > 1 and self.at(":}"))):
                self.error("a quoted value must close before `|` (write `\\|`)", start)
            value.append(self.take())
        self.index += 1
        return "".join(value)

    def list_value(self) -> str:
        start = self.index
        value = [self.take()]
        while not self.at("]"):
            if self.end_of_text:
                self.error("unclosed list value: `[` without `]`", start)
            value.append(self.take())
        value.append(self.take())
        return "".join(value)

    def plain_value(self, root: bool) -> str:
        value = []
        while not self.end_of_text and not self.at_space() and not self.command_end(root):
            value.append(self.take(spaces=True))
        return "".join(value)

    def unnamed_argument(self, root: bool, shape: CommandShape) -> list[str | ClosureNode]:
        split = shape.split
        values: list[str | ClosureNode] = []
        quoted: list[bool] = []
        buffer: list[str] = []
        is_list = split
        if not split and self.at('"'):
            values.append(self.quoted_value())
            quoted.append(True)
            is_list = True
        while not self.command_end(root):
            if split and shape.split_count and len(values) >= shape.split_count:
                # The count is reached: the rest is one value.
                split = False
                if self.at('"'):
                    values.append(self.quoted_value())
                    quoted.append(True)
                    continue
            if self.at("{:"):
                is_list = True
                if buffer:
                    values.append("".join(buffer))
                    quoted.append(False)
                    buffer = []
                values.append(self.closure(root=False))
                quoted.append(False)
                if split:
                    self.skip_space()
            elif split:
                if self.at('"'):
                    values.append(self.quoted_value())
                    quoted.append(True)
                elif self.at("["):
                    values.append(self.list_value())
                    quoted.append(False)
                else:
                    values.append(self.plain_value(root))
                    quoted.append(False)
                self.skip_space()
            else:
                buffer.append(self.take(symbols=_IN_TEXT if buffer or values else _ESCAPABLE))
        if not is_list:
            return ["".join(buffer).strip()]
        if buffer:
            values.append("".join(buffer))
            quoted.append(False)
        if values and isinstance(values[0], str):
            if not quoted[0]:
                values[0] = values[0].lstrip()
            if not values[0]:
                values.pop(0)
                quoted.pop(0)
        if values and isinstance(values[-1], str):
            if not quoted[-1]:
                values[-1] = values[-1].rstrip()
            if not values[-1]:
                values.pop()
                quoted.pop()
        count = shape.split_count
        if shape.split and count and count + 1 < len(values):
            # Quoting plus more text after the counted words: one value again, quotes kept.
            rest = "".join(
                f'"{value}"' if was_quoted else value
                for value, was_quoted in zip(values[count:], quoted[count:], strict=True)
                if isinstance(value, str)
            )
            values = [*values[:count], rest]
        return values
