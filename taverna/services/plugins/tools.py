"""Function tools the model may call: Python callables registered by name.

A preset declares which tools a chat offers (by name); the generation service
sends their specs, runs the calls the model makes, and feeds the results back.
"""

from __future__ import annotations

import inspect
import json
import random
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from taverna.errors import NotFound, TavernaError
from taverna.providers.request import ToolSpec

ToolFunction = Callable[[Mapping[str, Any]], Any | Awaitable[Any]]

# a tool that misbehaves must not flood the prompt
MAX_RESULT_CHARS = 8000


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool: what the model is told about it, and the Python function that runs it."""

    spec: ToolSpec
    run: ToolFunction


class ToolRegistry:
    """The tools this process can run, by name."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", tool.spec.name):
            raise TavernaError(
                "a tool name is 1-64 letters, digits, _ or -",
                field=f"tool {tool.spec.name!r}",
                code="tool_name_is_1_64",
            )
        self._tools[tool.spec.name] = tool

    def names(self) -> list[str]:
        return sorted(self._tools)

    def tools(self) -> list[Tool]:
        """Every registered tool, in registration order."""
        return list(self._tools.values())

    def specs(self, names: Iterable[str]) -> tuple[ToolSpec, ...]:
        """The specs of the named tools; an unknown name is an error naming it."""
        out = []
        for name in names:
            if name not in self._tools:
                known = ", ".join(self.names()) or "none"
                raise NotFound(
                    f"no tool named {name!r} is registered (known: {known})",
                    code="no_tool_named_is_registered",
                    params={"name": str(name), "known": str(known)},
                )
            out.append(self._tools[name].spec)
        return tuple(out)

    async def call(self, name: str, arguments: str) -> str:
        """Run one call; any failure becomes a text the model can read, never an exception."""
        tool = self._tools.get(name)
        if tool is None:
            return f"error: there is no tool named {name!r}"
        try:
            parsed = json.loads(arguments or "{}")
        except json.JSONDecodeError as exc:
            return f"error: the arguments are not valid JSON ({exc.msg})"
        if not isinstance(parsed, dict):
            return "error: the arguments must be a JSON object"
        try:
            result = tool.run(parsed)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:  # a tool's own failure is reported to the model
            return f"error: {type(exc).__name__}: {exc}"
        text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
        return text[:MAX_RESULT_CHARS]


_DICE = re.compile(r"^\s*(\d{0,3})\s*d\s*(\d{1,4})\s*([+-]\s*\d{1,5})?\s*$", re.IGNORECASE)


def roll_dice(arguments: Mapping[str, Any], rng: random.Random | None = None) -> dict[str, Any]:
    """Roll dice written as `NdM+K` (e.g. `2d6+1`): each die, and the total."""
    formula = str(arguments.get("formula", ""))
    match = _DICE.match(formula)
    if not match:
        raise ValueError(f"{formula!r} is not a dice formula like 2d6+1")
    count = int(match.group(1) or 1)
    sides = int(match.group(2))
    if not 1 <= count <= 100 or sides < 2:
        raise ValueError("roll 1-100 dice of at least 2 sides")
    bonus = int(match.group(3).replace(" ", "")) if match.group(3) else 0
    dice = [(rng or random).randint(1, sides) for _ in range(count)]
    return {"formula": formula, "rolls": dice, "total": sum(dice) + bonus}


DICE_TOOL = Tool(
    ToolSpec(
        "roll_dice",
        "Roll dice for a game or story event and return each die and the total.",
        {
            "type": "object",
            "properties": {
                "formula": {"type": "string", "description": "dice such as 1d20 or 2d6+1"}
            },
            "required": ["formula"],
        },
    ),
    roll_dice,
)


def default_tools() -> ToolRegistry:
    """The tools taverna ships with."""
    return ToolRegistry([DICE_TOOL])


def declared_tools(preset: Mapping[str, Any]) -> tuple[str, ...]:
    """The tools a Chat Completion preset offers: its `tools` names when `function_calling` is on.

    SillyTavern's presets have only the `function_calling` switch; the list of tool
    names is taverna's own key in the same preset (unknown keys travel unchanged).
    """
    if not preset.get("function_calling"):
        return ()
    names = preset.get("tools") or ()
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TavernaError(
            "expected a list of tool names", field="tools", code="expected_list_of_tool_names"
        )
    return tuple(names)
