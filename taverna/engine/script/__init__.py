"""STscript: SillyTavern's slash-command language, parsed and run without side effects.

    from taverna.engine.script import ScriptContext, run_script

    result = run_script("/setvar key=mood happy | /getvar mood", ScriptContext(variables=v))
    result.pipe        # "happy"
    result.variables   # the chat and global variables after the script

The commands that change a chat go through `ScriptContext.host` (a `ChatHost` the
services implement); nothing here reads a file, the network, a clock or a process.
A script stops with a `ScriptError` (command, line:column) at its step or time limit.
"""

from taverna.engine.script.commands import CATALOGUE, COMMANDS
from taverna.engine.script.errors import ScriptError
from taverna.engine.script.host import ChatHost, ChatLine, Generation, Injection, NoChat
from taverna.engine.script.interpreter import Command, Limits, ScriptContext, ScriptResult, run


def run_script(text: str, context: ScriptContext | None = None) -> ScriptResult:
    """Run `text` with SillyTavern's commands; see `ScriptContext` for what it may use."""
    return run(text, context or ScriptContext(), CATALOGUE)


def is_script(text: str) -> bool:
    """Whether a line typed into the chat is a script rather than a message."""
    return text.lstrip().startswith("/")


__all__ = [
    "CATALOGUE",
    "COMMANDS",
    "ChatHost",
    "ChatLine",
    "Command",
    "Generation",
    "Injection",
    "Limits",
    "NoChat",
    "ScriptContext",
    "ScriptError",
    "ScriptResult",
    "is_script",
    "run_script",
]
