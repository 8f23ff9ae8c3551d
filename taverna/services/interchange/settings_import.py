"""A SillyTavern `settings.json` (of any release) taken into the library, each part where
it belongs:

- the personas, as persona items with their pictures from `User Avatars/`;
- the templates in use (instruct, context, system prompt, reasoning), as template items,
  the instruct and context ones chosen for the next turns as SillyTavern had them;
- the Chat Completion settings, as a preset item (every source's model kept), chosen;
- the global regex scripts, as regex script items;
- the global lorebook selection and world-info settings, the global STscript variables,
  the cards allowed their own regex scripts and the other power-user settings, in the
  user's active settings;
- the API in use and the connection manager's profiles, as connections and connection
  profiles (`st_connections.py`), when the caller gives the account's connections.

A persona backup (`personas_*.json`) brings its personas alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from taverna.errors import FormatWarning, TavernaError
from taverna.formats import json_text
from taverna.formats import settings_file as part
from taverna.formats.personas import read_personas
from taverna.formats.validation import validate
from taverna.model.presets import (
    ChatCompletionPreset,
    ContextTemplate,
    InstructTemplate,
    ReasoningTemplate,
    SystemPromptPreset,
)
from taverna.model.regex_script import RegexScript
from taverna.services.connections.service import ConnectionService
from taverna.services.interchange.character_tags import FindCard, apply_tag_map
from taverna.services.interchange.report import ImportReport, Skipped
from taverna.services.interchange.st_connections import import_connections
from taverna.services.library.active_settings import SYSPROMPT_ENABLED, set_active
from taverna.services.library.service import LibraryKind, LibraryService

# Keys of the user's active settings document (beside the chosen presets' ids), in
# SillyTavern's shapes.
WORLD_INFO_SETTINGS = "world_info_settings"
POWER_USER = "power_user"
EXTENSION_SETTINGS = "extension_settings"

# The name under which a settings file's own Chat Completion settings are kept.
SETTINGS_PRESET_SUFFIX = " (settings.json)"


def import_personas(
    lib: LibraryService, data: bytes, *, file: str, avatars: Path | None = None
) -> ImportReport:
    """The personas of a `settings.json` (or persona backup), with their avatar pictures."""
    report = ImportReport()
    found: list[FormatWarning] = []
    for persona in read_personas(data, file=file, warnings=found).items():
        picture = None
        if avatars is not None:
            candidate = avatars / persona.avatar
            if candidate.is_file():
                picture = candidate.read_bytes()
            else:
                report.skipped.append(
                    Skipped(
                        str(candidate),
                        "avatar picture not found; persona kept without it",
                        "avatar_missing",
                    )
                )
        stored = lib.put_persona(persona, avatar=picture)
        report.stored.append(stored)
        # The folder's default persona becomes the default here too: only one is.
        if persona.is_default:
            lib.keep_one_default_persona(stored.id)
    if found and report.stored:  # one list for the file, with its first persona
        report.stored[0] = dataclasses.replace(report.stored[0], warnings=tuple(found))
    return report


def import_regex_scripts(lib: LibraryService, doc: Mapping[str, Any], *, file: str) -> ImportReport:
    """The global regex scripts kept in `settings.json` (`extension_settings.regex`)."""
    report = ImportReport()
    for index, raw in enumerate(part.regex_scripts_part(doc)):
        found: list[FormatWarning] = []
        try:
            script = validate(
                RegexScript,
                raw,
                file=file,
                prefix=f"extension_settings.regex.{index}",
                warnings=found,
            )
        except TavernaError as exc:
            report.skipped.append(Skipped.because(f"{file}#regex/{index}", exc))
            continue
        name = script.script_name or f"Regex {index + 1}"
        item = lib.put(LibraryKind.REGEX_SCRIPT, name, script.to_json(), file=file)
        report.stored.append(dataclasses.replace(item, warnings=tuple(found)))
    return report


def import_settings(
    lib: LibraryService,
    data: bytes,
    *,
    file: str,
    avatars: Path | None = None,
    connections: ConnectionService | None = None,
    find_card: FindCard | None = None,
) -> ImportReport:
    """Every part of a `settings.json` into the library and the active settings (and its
    connections and profiles into `connections`, when given); its character tags into the
    cards (`find_card`: a data folder's cards by avatar file)."""
    doc = json_text.loads(data, file=file)
    if not isinstance(doc, dict):
        raise TavernaError(
            "settings must be a JSON object", file=file, code="settings_must_be_json_object"
        )
    report = ImportReport()
    if any(key in part.power_user_part(doc) for key in part.PERSONA_KEYS):
        report.extend(import_personas(lib, data, file=file, avatars=avatars))
    report.extend(import_regex_scripts(lib, doc, file=file))
    power = part.power_user_part(doc)
    templates = (
        ("instruct", LibraryKind.INSTRUCT_TEMPLATE, InstructTemplate, "instruct_template"),
        ("context", LibraryKind.CONTEXT_TEMPLATE, ContextTemplate, "context_template"),
        ("sysprompt", LibraryKind.SYSTEM_PROMPT, SystemPromptPreset, None),
        ("reasoning", LibraryKind.REASONING_TEMPLATE, ReasoningTemplate, None),
    )
    for key, kind, model, active in templates:
        template = power.get(key)
        if not isinstance(template, dict):
            continue
        try:
            item = _template(lib, kind, model, template, file=file, field=f"power_user.{key}")
        except TavernaError as exc:
            report.skipped.append(Skipped.because(f"{file}#power_user.{key}", exc))
            continue
        report.stored.append(item)
        # an instruct template SillyTavern had switched off is kept, not chosen
        if active is not None and template.get("enabled", True) is not False:
            set_active(lib.store, active, item.id, lib.owner)
        if key == "sysprompt" and isinstance(template.get("enabled"), bool):
            set_active(lib.store, SYSPROMPT_ENABLED, template["enabled"], lib.owner)
    try:
        preset = _chat_completion_preset(lib, doc, file=file)
    except TavernaError as exc:
        report.skipped.append(Skipped.because(f"{file}#oai_settings", exc))
    else:
        report.stored.append(preset)
        set_active(lib.store, "chat_completion_preset", preset.id, lib.owner)
    # The Text Completion preset SillyTavern had chosen, when the library has it (a data
    # folder's presets are imported before its settings).
    textgen = doc.get("textgenerationwebui_settings")
    chosen = textgen.get("preset") if isinstance(textgen, dict) else None
    if isinstance(chosen, str) and chosen:
        found = lib.find(LibraryKind.TEXT_COMPLETION_PRESET, chosen)
        if found is not None:
            set_active(lib.store, "text_completion_preset", found.id, lib.owner)
    set_active(lib.store, WORLD_INFO_SETTINGS, part.world_info_part(doc), lib.owner)
    set_active(lib.store, POWER_USER, part.user_settings_part(doc), lib.owner)
    set_active(lib.store, EXTENSION_SETTINGS, part.prompt_extension_settings(doc), lib.owner)
    if connections is not None:
        report.extend(import_connections(connections, doc, file=file))
    apply_tag_map(lib, doc, find_card)
    return report


def _template(
    lib: LibraryService,
    kind: Any,
    model: type[Any],
    template: Mapping[str, Any],
    *,
    file: str,
    field: str,
) -> Any:
    """A template kept in the power-user settings, stored as its own file would be: its
    name under `name` (the settings call it `preset` for instruct and context ones)."""
    values = {key: value for key, value in template.items() if key not in ("preset", "enabled")}
    name = template.get("name") or template.get("preset")
    if not isinstance(name, str) or not name:
        name = field.rsplit(".", 1)[-1]
    values = {"name": name, **{k: v for k, v in values.items() if k != "name"}}
    checked = validate(model, values, file=file, prefix=field)
    return lib.put(kind, name, checked.to_json(), file=file)


_PRESET_KEYS = frozenset(
    info.alias or name for name, info in ChatCompletionPreset.model_fields.items()
) | {"preset_settings_openai", "bias_presets", "reverse_proxy", "names_in_completion"}


def _chat_completion_key(key: str) -> bool:
    """Whether a top-level key of a 1.9 settings file is one of its Chat Completion ones."""
    return key in _PRESET_KEYS or key.endswith(("_openai", "_model", "_prompt"))


def _chat_completion_preset(lib: LibraryService, doc: Mapping[str, Any], *, file: str) -> Any:
    """The settings' Chat Completion values as a preset item: the preset SillyTavern had
    chosen as the user last left it, under a name of its own."""
    found = part.chat_completion_part(doc)
    # 1.9 and before: the keys at the top level, among the others
    keep = _chat_completion_key if found is doc else lambda key: True
    oai = {key: value for key, value in found.items() if keep(key)}
    name = oai.get("preset_settings_openai")
    title = (
        f"{name if isinstance(name, str) and name else 'Chat Completion'}{SETTINGS_PRESET_SUFFIX}"
    )
    checked = validate(ChatCompletionPreset, oai, file=file, prefix="oai_settings")
    return lib.put(LibraryKind.CHAT_COMPLETION_PRESET, title, checked.to_json(), file=file)
