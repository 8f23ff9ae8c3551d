"""The STscript commands as the page shows them: /help's list, for the chat input's completion."""

from __future__ import annotations

from taverna.engine.script.commands import CommandHelp, describe

__all__ = ["CommandHelp", "script_commands"]


def script_commands() -> tuple[CommandHelp, ...]:
    """Every command by name: its aliases, named arguments, usage line and one-line help."""
    return describe()
