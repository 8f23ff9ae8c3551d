"""SillyTavern's `settings.json` as a file of its own, in the shape of any release.

The file is kept whole (every key, in order, so it is written back as it was); these
functions find its parts in the shape SillyTavern's current reader sees them:

- Chat Completion settings: `oai_settings`, or the top level of 1.9 and before, which
  spread them there (SillyTavern reads `settings.oai_settings ?? settings`).
- World-info settings: `world_info_settings`, or the top-level `world_info_*` keys of
  1.9 and before, where `world_info` named the one selected book (a string) or several
  (a list); SillyTavern moves both into the global selection when it loads them.
- Power-user settings (`power_user`): the instruct, context and system-prompt templates
  in use, the personas, the reasoning template and the rest of the user's choices.
- Global STscript variables: `extension_settings.variables.global`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Keys only a settings file has at its top level; the oldest files (TavernAI's) have
# none of the objects, only the user's name beside the API they used.
_SETTINGS_OBJECTS = (
    "power_user",
    "oai_settings",
    "world_info_settings",
    "textgenerationwebui_settings",
    "kai_settings",
    "nai_settings",
    "extension_settings",
)
_OLD_SETTINGS_KEYS = ("main_api", "api_server", "user_avatar", "amount_gen", "max_context")

# What a persona backup holds: a settings file without them is not one.
PERSONA_KEYS = ("personas", "persona_descriptions", "default_persona")


def is_settings(doc: Mapping[str, Any]) -> bool:
    """Whether a JSON object is a `settings.json` (of any release)."""
    if any(isinstance(doc.get(key), dict) for key in _SETTINGS_OBJECTS):
        return True
    return "username" in doc and any(key in doc for key in _OLD_SETTINGS_KEYS)


def era(doc: Mapping[str, Any]) -> str:
    """Which shape the file has, for a person: where its parts are kept."""
    if isinstance(doc.get("world_info_settings"), dict):
        return "1.10 and later"
    if isinstance(doc.get("power_user"), dict):
        return "1.9 and before (Chat Completion and world info at the top level)"
    return "early SillyTavern or TavernAI (no power-user settings)"


def _object(doc: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = doc.get(key)
    return value if isinstance(value, dict) else {}


def chat_completion_part(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    """The Chat Completion settings: `oai_settings`, or the top level of older files."""
    oai = doc.get("oai_settings")
    return oai if isinstance(oai, dict) else doc


def power_user_part(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The power-user settings (empty for files older than them)."""
    return _object(doc, "power_user")


def world_info_part(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The world-info settings in the current shape (`world_info_settings`).

    1.9's top-level keys are gathered, and its selection (one name, or a list of names)
    becomes the global selection, as SillyTavern migrates it on load.
    """
    current = doc.get("world_info_settings")
    if isinstance(current, dict):
        return current
    out = {key: value for key, value in doc.items() if key.startswith("world_info_")}
    selection = doc.get("world_info")
    if isinstance(selection, str):
        out["world_info"] = {"globalSelect": [selection] if selection else []}
    elif isinstance(selection, list):
        out["world_info"] = {"globalSelect": [s for s in selection if isinstance(s, str)]}
    elif isinstance(selection, dict):
        out["world_info"] = selection
    return out


def global_variables(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The global STscript variables (`extension_settings.variables.global`)."""
    variables = _object(_object(doc, "extension_settings"), "variables")
    return _object(variables, "global")


def prompt_extension_settings(doc: Mapping[str, Any]) -> dict[str, Any]:
    """What `extension_settings` holds for prompts, in its shape: the global variables,
    the card files and the presets (by API id) allowed their own regex scripts, the recall
    settings (`vectors`) and the summary settings (`memory`)."""
    extensions = _object(doc, "extension_settings")
    allowed = extensions.get("character_allowed_regex")
    part: dict[str, Any] = {
        "variables": {"global": global_variables(doc)},
        "character_allowed_regex": allowed if isinstance(allowed, list) else [],
    }
    presets = extensions.get("preset_allowed_regex")
    if isinstance(presets, dict):
        part["preset_allowed_regex"] = {
            api: [n for n in names if isinstance(n, str)]
            for api, names in presets.items()
            if isinstance(names, list)
        }
    vectors = extensions.get("vectors")
    if isinstance(vectors, dict):
        part["vectors"] = vectors  # recall by meaning (Vector Storage's settings)
    memory = extensions.get("memory")
    if isinstance(memory, dict):
        # Summaries (the Summarize extension's settings). Its Extras API and WebLLM
        # sources do not exist here: the chat's own model makes the summaries instead.
        source = memory.get("source", "extras")
        part["memory"] = {**memory, "source": "main" if source in ("extras", "webllm") else source}
    return part


def regex_scripts_part(doc: Mapping[str, Any]) -> list[Any]:
    """The global regex scripts as stored (`extension_settings.regex`)."""
    scripts = _object(doc, "extension_settings").get("regex")
    return scripts if isinstance(scripts, list) else []


def user_settings_part(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The power-user settings without the personas (kept as persona items) and the
    templates (kept as template items)."""
    skip = {*PERSONA_KEYS, "instruct", "context", "sysprompt", "reasoning"}
    return {key: value for key, value in power_user_part(doc).items() if key not in skip}
