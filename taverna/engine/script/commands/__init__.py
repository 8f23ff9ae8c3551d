"""The catalogue of STscript commands, by topic, with /help over all of them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from taverna.engine.script.commands import (
    chat,
    expressions,
    flow,
    fuzzy,
    math,
    page,
    quick_replies,
    text,
    tokens,
    variables,
)
from taverna.engine.script.interpreter import Call, Command
from taverna.engine.script.scope import ScriptValue

_NAMED = re.compile(r"(?<![\w=])([a-z][\w-]*)=")


@dataclass(frozen=True, slots=True)
class CommandHelp:
    """One command as /help and the input's completion show it."""

    name: str
    aliases: tuple[str, ...]
    named: tuple[str, ...]  # its named arguments, in the order its usage gives them
    usage: str
    help: str

    def line(self) -> str:
        aliases = f" (also /{', /'.join(self.aliases)})" if self.aliases else ""
        return f"{self.usage}{aliases} - {self.help}"


def command_help(command: Command) -> CommandHelp:
    """What /help says of a command: its usage line names its named arguments (`key=`)."""
    words = (command.usage or f"/{command.name}").split(" ", 1)
    usage = " ".join(
        [f"/{command.name}", *words[1:]]
    )  # by its name, even where written by an alias
    named = tuple(dict.fromkeys(_NAMED.findall(usage)))
    return CommandHelp(command.name, command.aliases, named, usage, command.help)


def describe() -> tuple[CommandHelp, ...]:
    """Every command, by name."""
    return tuple(command_help(c) for c in sorted(COMMANDS, key=lambda c: c.name))


def _help(call: Call) -> ScriptValue:
    wanted = call.text().strip().lstrip("/")
    if wanted:
        command = CATALOGUE.get(wanted)
        if command is None:
            return f"no command /{wanted}"
        return command_help(command).line()
    return "\n".join(entry.line() for entry in describe())


def _comment(call: Call) -> ScriptValue:
    return ""


COMMANDS: tuple[Command, ...] = (
    *flow.COMMANDS,
    *variables.COMMANDS,
    *math.COMMANDS,
    *text.COMMANDS,
    *fuzzy.COMMANDS,
    *chat.COMMANDS,
    *quick_replies.COMMANDS,
    *tokens.COMMANDS,
    *page.COMMANDS,
    *expressions.COMMANDS,
    Command("help", _help, "List the commands, or describe one.", ("?",), usage="/help [command]"),
)


def _catalogue(commands: tuple[Command, ...]) -> Mapping[str, Command]:
    table: dict[str, Command] = {}
    for command in commands:
        for name in (command.name, *command.aliases):
            if name in table:
                raise AssertionError(f"/{name} is defined twice")
            table[name] = command
    return MappingProxyType(table)


CATALOGUE: Mapping[str, Command] = _catalogue(COMMANDS)
