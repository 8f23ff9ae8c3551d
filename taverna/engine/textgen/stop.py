"""Stop strings sent with a Text Completion request (algo-prompt-assembly.md §7.1)."""

from __future__ import annotations

from collections.abc import Sequence

from taverna.engine.assembly.stop import Macros, custom_stopping_strings
from taverna.engine.textgen.instruct import InstructFormat
from taverna.model.presets import ContextTemplate
from taverna.model.settings import PowerUserSettings


def stopping_strings(
    *,
    user: str,
    char: str,
    context: ContextTemplate,
    power_user: PowerUserSettings,
    instruct: InstructFormat | None,
    macros: Macros,
    impersonate: bool = False,
    continuing_user_message: bool = False,
    other_members: Sequence[str] = (),
) -> list[str]:
    """Every stop string, in SillyTavern's order, without repeats (`getStoppingStrings`).

    `instruct` is the bound instruct template when instruct mode is on;
    `continuing_user_message` is true when continuing and the chat ends with the
    user's message; `other_members` are the group's other speakers.
    """
    result: list[str] = []
    if context.names_as_stop_strings:
        user_line = f"\n{user}:"
        char_line = f"\n{char}:"
        result.append(char_line if impersonate else user_line)
        result.append(user_line)
        if continuing_user_message:
            result.append(char_line)
        result.extend(f"\n{name}:" for name in other_members if name and name != char)
    if instruct is not None:
        result.extend(instruct.stop_sequences())
    if context.use_stop_strings:
        if context.chat_start:
            result.append("\n" + macros(context.chat_start))
        if context.example_separator:
            result.append("\n" + macros(context.example_separator))
    result.extend(custom_stopping_strings(power_user, macros))
    if power_user.single_line:
        result.insert(0, "\n")
    unique: list[str] = []
    for item in result:
        if item not in unique:
            unique.append(item)
    return unique
