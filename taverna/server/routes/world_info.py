"""The world-info settings every chat's lorebook scan uses (SillyTavern's
`world_info_settings`): the books active for every chat, scan depth, budget, recursion,
matching and the overflow alert."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from taverna.server.context import library
from taverna.server.schemas import Strict
from taverna.services.library.lore_settings import change_lore_settings, read_lore_settings
from taverna.services.library.service import LibraryService

router = APIRouter(prefix="/api/world-info-settings", tags=["lorebooks"])

SELECT_MAX = 1000


class GlobalSelection(Strict):
    globalSelect: list[str] = Field(  # SillyTavern's name
        max_length=SELECT_MAX, description="the lorebooks active for every chat, by name"
    )


class WorldInfoSettingsIn(Strict):
    """A change: the keys left out keep their values (SillyTavern's names and ranges)."""

    world_info: GlobalSelection | None = None
    world_info_depth: int | None = Field(None, description="messages scanned, 0 to 1000")
    world_info_budget: int | None = Field(None, description="per cent of the context, 1 to 100")
    world_info_budget_cap: int | None = Field(None, description="tokens, 0 (no cap) to 65536")
    world_info_min_activations: int | None = Field(None, description="0 to 100")
    world_info_min_activations_depth_max: int | None = Field(None, description="0 to 100")
    world_info_max_recursion_steps: int | None = Field(None, description="0 (no limit) to 10")
    world_info_character_strategy: int | None = Field(
        None, description="0 evenly, 1 character first, 2 global first"
    )
    world_info_recursive: bool | None = None
    world_info_case_sensitive: bool | None = None
    world_info_match_whole_words: bool | None = None
    world_info_include_names: bool | None = None
    world_info_use_group_scoring: bool | None = None
    world_info_overflow_alert: bool | None = None


class WorldInfoSettingsOut(BaseModel):
    """The settings in force, a new install's for what was never set."""

    world_info: dict[str, list[str]] = Field(description='{"globalSelect": [names]}')
    world_info_depth: int
    world_info_budget: int
    world_info_budget_cap: int
    world_info_min_activations: int
    world_info_min_activations_depth_max: int
    world_info_max_recursion_steps: int
    world_info_character_strategy: int
    world_info_recursive: bool
    world_info_case_sensitive: bool
    world_info_match_whole_words: bool
    world_info_include_names: bool
    world_info_use_group_scoring: bool
    world_info_overflow_alert: bool


@router.get("")
def read_settings(account: LibraryService = Depends(library)) -> WorldInfoSettingsOut:
    """The world-info settings in force, under SillyTavern's names."""
    return WorldInfoSettingsOut(**read_lore_settings(account))


@router.put("")
async def write_settings(
    body: WorldInfoSettingsIn, account: LibraryService = Depends(library)
) -> WorldInfoSettingsOut:
    """Change world-info settings; a value out of range is refused with its key named and
    nothing stored. The next prompt scans with them."""
    changes: dict[str, Any] = body.model_dump(exclude_none=True)
    return WorldInfoSettingsOut(**await asyncio.to_thread(change_lore_settings, account, changes))
