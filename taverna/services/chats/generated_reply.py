"""What a generated reply stores beside its text: the tool steps that came before it and
the chat state it records (lorebook timers, variables), copy on write."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from taverna.model.chat import ChatState


@dataclass(frozen=True, slots=True)
class ToolStep:
    """A function tool the model called on its way to a reply.

    Stored as a hidden system message before the reply, so the path keeps what the
    model did (and an export carries it) while the model's next prompt leaves it out.
    `said`: what the model wrote alongside the call (the first call of a round).
    """

    said: str
    call_id: str
    name: str
    arguments: str
    result: str

    @property
    def content(self) -> str:
        """The step's message text: what the model said, then the call and its answer."""
        shown = f"{self.name}({self.arguments}) → {self.result}"
        said = self.said.strip()
        return f"{said}\n{shown}" if said else shown

    @property
    def extras(self) -> dict[str, Any]:
        """The call as data, for exports and for prompts that replay tool calls."""
        return {
            "tool_invocations": [
                {
                    "id": self.call_id,
                    "name": self.name,
                    "arguments": self.arguments,
                    "result": self.result,
                }
            ]
        }


def recorded_state(turn_state: Mapping[str, Any] | None, inherited: ChatState) -> ChatState | None:
    """The state a generated message records: the turn's lorebook timers and variables
    over what it inherits; None when the turn changed nothing (the node inherits, copy
    on write).

    Timers are counted in messages along the path (ARCHITECTURE.md §1.3): a swipe or a
    regenerate starts again from the state before the reply it replaces, so it cannot
    advance them, and a branch keeps the timers of its own path.
    """
    if not turn_state:
        return None
    changes: dict[str, Any] = {}
    timers = turn_state.get("timedWorldInfo")
    if isinstance(timers, Mapping) and _timers(timers) != _timers(inherited.timers):
        changes["timers"] = dict(timers)
    variables = turn_state.get("variables")
    if isinstance(variables, Mapping) and dict(variables) != dict(inherited.variables):
        changes["variables"] = dict(variables)
    return replace(inherited, **changes) if changes else None


def _timers(timers: Mapping[str, Any]) -> dict[str, Any]:
    """Timer records without empty tables (`{"sticky": {}}` is no timer at all)."""
    return {kind: dict(table) for kind, table in timers.items() if table}
