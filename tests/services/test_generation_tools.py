"""Function tools: the registry, the shipped dice tool, and what a preset declares."""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from taverna.errors import NotFound, TavernaError
from taverna.providers.request import ToolSpec
from taverna.services.plugins.tools import (
    Tool,
    ToolRegistry,
    declared_tools,
    default_tools,
    roll_dice,
)


def test_dice_rolls_within_range_and_adds_the_bonus() -> None:
    rolled = roll_dice({"formula": "3d6+2"}, random.Random(1))
    assert len(rolled["rolls"]) == 3 and all(1 <= r <= 6 for r in rolled["rolls"])
    assert rolled["total"] == sum(rolled["rolls"]) + 2
    with pytest.raises(ValueError):
        roll_dice({"formula": "rm -rf"})


def test_a_tool_failure_is_text_for_the_model_not_an_exception() -> None:
    registry = default_tools()
    bad = asyncio.run(registry.call("roll_dice", '{"formula": "lots"}'))
    assert bad.startswith("error: ValueError")
    assert asyncio.run(registry.call("nope", "{}")).startswith("error: there is no tool")
    assert "not valid JSON" in asyncio.run(registry.call("roll_dice", "{oops"))
    good = json.loads(asyncio.run(registry.call("roll_dice", '{"formula": "1d20"}')))
    assert 1 <= good["total"] <= 20


def test_async_tools_and_long_results() -> None:
    async def shout(args: object) -> str:
        return "A" * 20000

    registry = ToolRegistry([Tool(ToolSpec("shout", "Shout"), shout)])
    assert len(asyncio.run(registry.call("shout", "{}"))) == 8000


def test_specs_name_an_unknown_tool() -> None:
    with pytest.raises(NotFound, match="no tool named 'weather'"):
        default_tools().specs(["weather"])
    with pytest.raises(TavernaError):
        ToolRegistry([Tool(ToolSpec("bad name!", "x"), lambda a: a)])


def test_a_preset_declares_tools_only_with_function_calling_on() -> None:
    assert declared_tools({"tools": ["roll_dice"]}) == ()
    assert declared_tools({"function_calling": True, "tools": ["roll_dice"]}) == ("roll_dice",)
    with pytest.raises(TavernaError, match="tools"):
        declared_tools({"function_calling": True, "tools": "roll_dice"})
