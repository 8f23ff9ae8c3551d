"""/help lists every command with its aliases and named arguments; /help NAME shows one."""

from __future__ import annotations

import re
from pathlib import Path

from taverna.engine.script import CATALOGUE, ScriptContext, run_script
from taverna.engine.script.commands import COMMANDS, describe

_COMMANDS_DIR = Path(__file__).parents[3] / "taverna" / "engine" / "script" / "commands"


def _help(text: str = "") -> str:
    return run_script(f"/help {text}".strip(), ScriptContext()).pipe


def test_every_command_appears_in_help_with_its_named_arguments() -> None:
    lines = _help().splitlines()
    assert len(lines) == len(COMMANDS)
    for command in COMMANDS:
        line = next(
            (
                x
                for x in lines
                if x.startswith(f"/{command.name} ")
                or x == f"/{command.name}"
                or x.startswith(f"/{command.name} -")
            ),
            None,
        )
        assert line is not None, command.name
        for alias in command.aliases:
            assert f"/{alias}" in line
    entries = {entry.name: entry for entry in describe()}
    for entry in entries.values():
        line = next(x for x in lines if x.startswith(entry.usage))
        for name in entry.named:
            assert f"{name}=" in line
    assert entries["setvar"].named[0] == "key"
    assert {"left", "right", "rule", "else"} <= set(entries["if"].named)


def test_every_named_argument_a_handler_reads_is_listed() -> None:
    # Each `call.arg("x")` in the command modules is a named argument some command's usage names.
    read = set()
    for path in _COMMANDS_DIR.glob("*.py"):
        read |= set(re.findall(r'call\.arg\("([\w-]+)"', path.read_text(encoding="utf-8")))
    listed = {name for entry in describe() for name in entry.named}
    assert read - listed == set()


def test_help_for_one_command_and_an_alias() -> None:
    assert _help("setvar").startswith("/setvar key=name")
    assert "- Set a chat variable" in _help("setvar")
    assert _help("/setvar") == _help("setvar")
    assert _help("nosuch") == "no command /nosuch"
    assert set(CATALOGUE) >= {"help", "?"}
