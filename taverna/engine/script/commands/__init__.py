"""The catalogue of STscript commands, by topic, with /help over all of them."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from taverna.engine.script.commands import chat, flow, math, quick_replies, text, variables
from taverna.engine.script.interpreter import Call, Command
from taverna.engine.script.scope import ScriptValue


def _help(call: Call) -> ScriptValue:
    wanted = call.text().strip().lstrip("/")
    if wanted:
        command = CATALOGUE.get(wanted)
        if command is None:
            return f"no command /{wanted}"
        aliases = f" (also /{', /'.join(command.aliases)})" if command.aliases else ""
        return f"{command.usage or '/' + command.name}{aliases}\n{command.help}"
    return "\n".join(
        f"/{command.name} - {command.help}" for command in sorted(COMMANDS, key=lambda c: c.name)
    )


def _comment(call: Call) -> ScriptValue:
    return ""


COMMANDS: tuple[Command, ...] = (
    *flow.COMMANDS,
    *variables.COMMANDS,
    *math.COMMANDS,
    *text.COMMANDS,
    *chat.COMMANDS,
    *quick_replies.COMMANDS,
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
