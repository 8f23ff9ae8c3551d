"""The world-info settings as a person reads and changes them: SillyTavern's
`world_info_settings` of the active settings, under its names.

A change names only the keys it changes; the others (SillyTavern's keys this product does
not show among them) are kept. A value of the wrong kind or out of SillyTavern's range is
refused with the key named, and nothing is stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taverna.errors import FormatError
from taverna.formats.st_settings import read_world_info_settings
from taverna.model.lorebook import WorldInfoSettings
from taverna.services.library.active_settings import ACTIVE, SETTINGS_KIND, set_active
from taverna.services.library.service import LibraryKind, LibraryService

WORLD_INFO_SETTINGS = "world_info_settings"
GLOBAL_SELECT = "world_info"  # `{"globalSelect": [names]}`: the books every chat uses

# SillyTavern's sliders: the lowest and highest value of each count.
RANGES: Mapping[str, tuple[int, int]] = {
    "world_info_depth": (0, 1000),
    "world_info_budget": (1, 100),  # per cent of the context
    "world_info_budget_cap": (0, 65536),  # tokens; 0: no cap
    "world_info_min_activations": (0, 100),
    "world_info_min_activations_depth_max": (0, 100),
    "world_info_max_recursion_steps": (0, 10),  # 0: no limit
    "world_info_character_strategy": (0, 2),  # evenly, character first, global first
}
FLAGS = (
    "world_info_recursive",
    "world_info_case_sensitive",
    "world_info_match_whole_words",
    "world_info_include_names",
    "world_info_use_group_scoring",
    "world_info_overflow_alert",
)


def to_st(settings: WorldInfoSettings) -> dict[str, Any]:
    """The settings in force, under SillyTavern's names."""
    return {
        GLOBAL_SELECT: {"globalSelect": list(settings.global_select)},
        "world_info_depth": settings.depth,
        "world_info_budget": int(settings.budget_percent),
        "world_info_budget_cap": settings.budget_cap,
        "world_info_min_activations": settings.min_activations,
        "world_info_min_activations_depth_max": settings.min_activations_depth_max,
        "world_info_max_recursion_steps": settings.max_recursion_steps,
        "world_info_character_strategy": int(settings.character_strategy),
        "world_info_recursive": settings.recursive,
        "world_info_case_sensitive": settings.case_sensitive,
        "world_info_match_whole_words": settings.match_whole_words,
        "world_info_include_names": settings.include_names,
        "world_info_use_group_scoring": settings.use_group_scoring,
        "world_info_overflow_alert": settings.overflow_alert,
    }


def _raw(lib: LibraryService) -> dict[str, Any]:
    docs = lib.store.find_documents(SETTINGS_KIND, name=ACTIVE, owner=lib.owner)
    found = docs[-1].data.get(WORLD_INFO_SETTINGS) if docs else None
    return dict(found) if isinstance(found, Mapping) else {}


def read_lore_settings(lib: LibraryService) -> dict[str, Any]:
    """The person's world-info settings in force (a new install's for what was never set)."""
    return to_st(read_world_info_settings(_raw(lib), file=ACTIVE))


def _check(lib: LibraryService, changes: Mapping[str, Any]) -> None:
    for key, value in changes.items():
        if key in FLAGS and not isinstance(value, bool):
            raise FormatError(
                f"{key} must be true or false",
                field=key,
                code="must_be_true_or_false",
                params={"key": key},
            )
        if key in RANGES:
            low, high = RANGES[key]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise FormatError(
                    f"{key} must be a whole number from {low} to {high}",
                    field=key,
                    code="setting_out_of_range",
                    params={"key": key, "low": str(low), "high": str(high)},
                )
    if GLOBAL_SELECT in changes:
        _check_selection(lib, changes[GLOBAL_SELECT])


def _check_selection(lib: LibraryService, selection: Any) -> None:
    field = "world_info.globalSelect"
    names = selection.get("globalSelect") if isinstance(selection, Mapping) else None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise FormatError(
            f"{field} must be a list of lorebook names",
            field=field,
            code="must_be_list_of_names",
            params={"key": field},
        )
    books = {d.name for d in lib.documents(LibraryKind.LOREBOOK)}
    for name in names:
        if name not in books:
            raise FormatError(
                f'no lorebook named "{name}"',
                field=field,
                code="no_lorebook_named",
                params={"book": name},
            )


def change_lore_settings(lib: LibraryService, changes: Mapping[str, Any]) -> dict[str, Any]:
    """Change some world-info settings (SillyTavern's names); the settings in force after."""
    _check(lib, changes)
    merged = _raw(lib)
    for key, value in changes.items():
        if key == GLOBAL_SELECT:
            # The selection object may hold more (`charLore`): only the global list changes.
            inner = merged.get(GLOBAL_SELECT)
            merged[key] = {
                **(inner if isinstance(inner, Mapping) else {}),
                "globalSelect": list(dict.fromkeys(value["globalSelect"])),
            }
        else:
            merged[key] = value
    set_active(lib.store, WORLD_INFO_SETTINGS, merged, lib.owner)
    return read_lore_settings(lib)
