"""The library: documents, editors, presets, the prompt manager, active settings.

Its public face: what other domains and the shells use from it.
"""

from taverna.services.library.active_settings import (
    ACTIVE,
    SETTINGS_KIND,
    active_choices_document,
    global_variables,
    set_active,
    world_info_settings,
    write_global_variables,
)
from taverna.services.library.editing import all_personas
from taverna.services.library.regex_library import (
    CHARACTER_KIND,
    PRESET_KIND,
    REGEX_KIND,
    TEXT_PRESET_KIND,
    LayerScripts,
    RegexLayer,
    RegexLibrary,
    RegexUse,
    in_order,
    read_script,
    regex_order,
    try_scripts,
)
from taverna.services.library.service import LibraryKind, LibraryService, StoredItem
from taverna.services.library.watch import Kept, LibraryWatch

__all__ = [
    "ACTIVE",
    "CHARACTER_KIND",
    "PRESET_KIND",
    "REGEX_KIND",
    "SETTINGS_KIND",
    "TEXT_PRESET_KIND",
    "Kept",
    "LayerScripts",
    "LibraryKind",
    "LibraryService",
    "LibraryWatch",
    "RegexLayer",
    "RegexLibrary",
    "RegexUse",
    "StoredItem",
    "active_choices_document",
    "all_personas",
    "global_variables",
    "in_order",
    "read_script",
    "regex_order",
    "set_active",
    "try_scripts",
    "world_info_settings",
    "write_global_variables",
]
