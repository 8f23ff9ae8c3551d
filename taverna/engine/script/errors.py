"""The error a script reports: what went wrong, in which command, at which line and column."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from taverna.errors import TavernaError

if TYPE_CHECKING:
    from taverna.engine.macros import Variables


def line_column(text: str, index: int) -> tuple[int, int]:
    """The 1-based line and column of `index` in `text`."""
    index = max(0, min(index, len(text)))
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return line, column


class ScriptError(TavernaError):
    """A script could not be parsed or a command failed.

    `command` names the command (without the slash) when one is to blame; `line` and
    `column` point into the script's text (1-based). `reason` is the bare message;
    `message` (and `str()`) lead with the command and the position. `variables`: the
    chat and global variables as the script left them when it failed (None when it
    failed before running), which SillyTavern keeps.
    """

    variables: Variables | None

    def __init__(
        self,
        message: str,
        *,
        command: str | None = None,
        line: int | None = None,
        column: int | None = None,
        code: str | None = None,
        params: Mapping[str, str | int] | None = None,
    ) -> None:
        self.reason = message
        self.command = command
        self.line = line
        self.column = column
        self.variables = None
        super().__init__(self._located(), code=code, params=params)

    def _located(self) -> str:
        where = []
        if self.command is not None:
            where.append(f"/{self.command}")
        if self.line is not None and self.column is not None:
            where.append(f"at {self.line}:{self.column}")
        prefix = " ".join(where)
        return f"{prefix}: {self.reason}" if prefix else self.reason

    def locate(self, command: str | None, line: int, column: int) -> ScriptError:
        """This error placed at a command (where it has no place yet)."""
        if self.line is None:
            self.line, self.column = line, column
        if self.command is None and command:
            self.command = command
        self.message = self._located()
        self.args = (self.message,)
        return self

    def __str__(self) -> str:
        return self.message

    @classmethod
    def at(cls, message: str, text: str, index: int, command: str | None = None) -> ScriptError:
        line, column = line_column(text, index)
        return cls(message, command=command, line=line, column=column)
