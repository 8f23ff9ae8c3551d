"""SillyTavern's world info settings, as the lorebook scan reads them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from taverna.engine.lorebook.matching import Boundaries
from taverna.model.lorebook import CharacterStrategy


@dataclass(frozen=True, slots=True)
class WorldInfoSettings:
    """SillyTavern's `world_info_*` settings (defaults: the code defaults, §0).

    `boundaries` chooses the whole-word rule: `UNICODE` (taverna's, CJK-aware) or
    `ASCII` (SillyTavern's exact JavaScript `\\W`).
    """

    depth: int = 2
    budget_percent: float = 25
    budget_cap: int = 0
    include_names: bool = True
    recursive: bool = False
    case_sensitive: bool = False
    match_whole_words: bool = False
    use_group_scoring: bool = False
    character_strategy: CharacterStrategy = CharacterStrategy.CHARACTER_FIRST
    min_activations: int = 0
    min_activations_depth_max: int = 0
    max_recursion_steps: int = 0
    boundaries: Boundaries = Boundaries.UNICODE

    @classmethod
    def from_sillytavern(
        cls, data: Mapping[str, Any], *, boundaries: Boundaries = Boundaries.UNICODE
    ) -> WorldInfoSettings:
        """From SillyTavern's `world_info_settings` object (missing keys keep defaults)."""

        def number(name: str, default: float) -> float:
            value = data.get(name, default)
            try:
                return float(value)
            except (TypeError, ValueError):
                return default

        budget = number("world_info_budget", 25)
        try:
            strategy = CharacterStrategy(int(number("world_info_character_strategy", 1)))
        except ValueError:
            strategy = CharacterStrategy.EVENLY  # §1 step 4: unknown values act as evenly
        return cls(
            depth=int(number("world_info_depth", 2)),
            budget_percent=25 if budget > 100 else budget,  # §0: values over 100 become 25
            budget_cap=int(number("world_info_budget_cap", 0)),
            include_names=bool(data.get("world_info_include_names", True)),
            recursive=bool(data.get("world_info_recursive", False)),
            case_sensitive=bool(data.get("world_info_case_sensitive", False)),
            match_whole_words=bool(data.get("world_info_match_whole_words", False)),
            use_group_scoring=bool(data.get("world_info_use_group_scoring", False)),
            character_strategy=strategy,
            min_activations=int(number("world_info_min_activations", 0)),
            min_activations_depth_max=int(number("world_info_min_activations_depth_max", 0)),
            max_recursion_steps=int(number("world_info_max_recursion_steps", 0)),
            boundaries=boundaries,
        )

    def budget_for(self, max_context: int) -> int:
        """Tokens the scan may spend: a share of the prompt budget, capped (§4.1 step 2)."""
        raw = self.budget_percent * max_context / 100
        budget = int(raw + 0.5) if raw >= 0 else -int(-raw + 0.5)  # JavaScript Math.round
        budget = budget or 1
        if self.budget_cap > 0 and budget > self.budget_cap:
            budget = self.budget_cap
        return budget
