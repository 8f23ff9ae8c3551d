"""SillyTavern's `ChatCompletion`: a Chat Completion prompt's parts by slot, and the budget left."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from taverna.engine.assembly.budget import MessageCost
from taverna.model.prompt import PromptImage, PromptMessage


class BudgetExceeded(Exception):
    """A part that must go in does not fit: SillyTavern stops assembling there (§3.3 step 2)."""


@dataclass(slots=True)
class Slot:
    """A prompt of the prompt collection, after markers are filled."""

    identifier: str
    role: str
    content: str
    injection_position: int = 0
    injection_depth: int = 4
    system_prompt: bool = True
    extension: bool = False
    side: str = ""  # "start" / "end" for relative extension prompts
    kind: str = "slot"
    source: str = ""
    volatile: bool = False


@dataclass(slots=True)
class Part:
    """One message being budgeted, with its ledger identity."""

    identifier: str
    role: str
    content: str
    tokens: int
    name: str = ""
    kind: str = "slot"
    source: str = ""
    volatile: bool = False
    message: PromptMessage | None = None  # built once for a part kept across turns
    images: tuple[PromptImage, ...] = ()  # sent with the text (their tokens are counted in)
    # the code of `source`'s words (LEDGER_SOURCES) and its values, for a page's language
    source_code: str = ""
    source_params: Mapping[str, str | int] | None = None


@dataclass(slots=True)
class Layout:
    """SillyTavern's `ChatCompletion`: a sparse list of collections and the budget left."""

    budget: int
    cost: MessageCost
    collections: dict[int, tuple[str, list[Part]]] = field(default_factory=dict)
    # a part left out and its reason's code (LEDGER_REASONS)
    dropped: list[tuple[Part, str]] = field(default_factory=list)
    history_stopped: bool = False  # see Ledger.history_stopped

    def part(self, identifier: str, role: str, content: str, name: str = "", **kw: Any) -> Part:
        tokens = self.cost.message(role, content, name)
        return Part(identifier, role, content, tokens, name, **kw)

    def affordable(self, part: Part) -> bool:
        return self.budget - part.tokens >= 0

    def _check(self, part: Part) -> None:
        if not self.affordable(part):
            self.dropped.append((part, "required_does_not_fit"))
            raise BudgetExceeded(part.identifier)

    def add(self, identifier: str, parts: list[Part], index: int | None) -> None:
        tokens = sum(p.tokens for p in parts)
        if self.budget - tokens < 0:
            for p in parts:
                self.dropped.append((p, "required_does_not_fit"))
            raise BudgetExceeded(identifier)
        if index is None or index == -1:
            index = max(self.collections) + 1 if self.collections else 0
        self.collections[index] = (identifier, parts)
        self.budget -= tokens

    def find(self, identifier: str) -> list[Part] | None:
        for ident, parts in self.collections.values():
            if ident == identifier:
                return parts
        return None

    def insert(self, part: Part, identifier: str, where: str = "end") -> None:
        self._check(part)
        target = self.find(identifier)
        if target is None or not (part.content or part.images):
            return
        if where == "start":
            target.insert(0, part)
        else:
            target.append(part)
        self.budget -= part.tokens

    def ordered(self) -> list[tuple[str, list[Part]]]:
        return [self.collections[i] for i in sorted(self.collections)]
