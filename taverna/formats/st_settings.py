"""SillyTavern's `settings.json`, read into what prompt assembly needs.

One user's `settings.json` holds the active Chat Completion preset
(`oai_settings`), the power-user settings with the instruct/context/system-prompt
templates and the persona, the world-info settings with the global lorebook
selection, the Text Completion sampler settings and the author's note defaults.
This reader keeps only what changes the prompt; unknown keys are ignored. The
same reader takes one Chat Completion preset, instruct or context template file on
its own, as the settings would hold it when chosen (`chosen_chat_completion`,
`chosen_instruct_template`, `chosen_context_template`). `taverna.services.turns.inputs`
turns the result into the engine's context.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, TypeVar

from pydantic import ValidationError

from taverna.errors import FormatError
from taverna.formats import settings_file
from taverna.formats.json_text import loads
from taverna.formats.settings_reader import SettingsReader, settings_document
from taverna.formats.st_chat_completion import read_chat_completion
from taverna.formats.validation import validate
from taverna.model.chat import AuthorsNote
from taverna.model.injection import InjectionRole
from taverna.model.lorebook import DEFAULT_WORLD_INFO, CharacterStrategy, WorldInfoSettings
from taverna.model.persona import PersonaPosition
from taverna.model.presets import (
    ContextTemplate,
    InstructTemplate,
    SystemPromptPreset,
    migrated_story_string,
)
from taverna.model.regex_script import RegexScript
from taverna.model.settings import (
    DEFAULT_CONTEXT_TEMPLATE,
    DEFAULT_INSTRUCT_TEMPLATE,
    DEFAULT_SYSTEM_PROMPT,
    ChatCompletionSettings,
    PersonaInfo,
    PowerUserSettings,
    TextCompletionSettings,
)
from taverna.model.summary import SummarySettings, SummarySource


@dataclass(frozen=True, slots=True)
class CharacterNote:
    """A per-character author's note (`extension_settings.note.chara`)."""

    name: str
    prompt: str
    use: bool
    position: str  # replace | before | after


@dataclass(frozen=True, slots=True)
class SillyTavernSettings:
    """The prompt-relevant part of one SillyTavern `settings.json`."""

    main_api: str = "openai"
    chat_completion: ChatCompletionSettings = field(default_factory=ChatCompletionSettings)
    text_completion: TextCompletionSettings = field(default_factory=TextCompletionSettings)
    power_user: PowerUserSettings = field(default_factory=PowerUserSettings)
    world_info: WorldInfoSettings = DEFAULT_WORLD_INFO
    persona: PersonaInfo = field(default_factory=PersonaInfo)
    authors_note: AuthorsNote = field(default_factory=AuthorsNote)  # a new chat's note
    # `extension_settings.note.allowWIScan`: the lorebook scans the author's note and the
    # characters' notes
    allow_wi_scan: bool = False
    character_notes: tuple[CharacterNote, ...] = ()
    regex_scripts: tuple[RegexScript, ...] = ()  # global scripts, in order (none if disabled)
    regex_allowed: tuple[str, ...] = ()  # card files whose own scripts may run
    # The chosen Chat Completion preset's own scripts (`extensions.regex_scripts`), when the
    # person allowed that preset's (`extension_settings.preset_allowed_regex.openai`); they
    # run after the global ones. SillyTavern keeps preset scripts on the preset of the API
    # in use: a Text Completion connection runs the chosen Text Completion preset's instead
    # (`preset_allowed_regex.textgenerationwebui`), which `for_api` swaps in.
    preset_regex_scripts: tuple[RegexScript, ...] = ()
    text_preset_regex_scripts: tuple[RegexScript, ...] = ()
    raw_regex_enabled: bool = True  # the regex extension is not switched off
    # `extension_settings.variables.global`: what `{{getglobalvar}}` reads
    global_variables: Mapping[str, Any] = field(default_factory=dict)
    # `extension_settings.memory`: the Summarize extension's settings
    summary: SummarySettings = field(default_factory=SummarySettings)
    raw: Mapping[str, Any] = field(default_factory=dict)


def read_settings(data: bytes | str, *, file: str | None = None) -> SillyTavernSettings:
    """Read SillyTavern's `settings.json`; a malformed part raises FormatError naming it."""
    doc = loads(data, file=file)
    if not isinstance(doc, dict):
        raise FormatError(
            "settings must be a JSON object", file=file, code="settings_must_be_json_object"
        )
    reader = _SettingsReader(file)
    power = reader.obj(doc, "power_user")
    # Files of 1.9 and before keep these at the top level (settings_file.py).
    oai = settings_file.chat_completion_part(doc)
    oai_path = "oai_settings." if oai is not doc else ""
    wi = settings_file.world_info_part(doc)
    return SillyTavernSettings(
        main_api=reader.str_(doc, "main_api", "openai"),
        chat_completion=read_chat_completion(reader, oai, oai_path),
        text_completion=reader.text_completion(doc, power),
        power_user=reader.power_user(power),
        world_info=reader.world_info(
            wi, "world_info_settings." if wi is doc.get("world_info_settings") else ""
        ),
        persona=reader.persona(doc, power),
        authors_note=reader.authors_note(doc),
        allow_wi_scan=reader.allow_wi_scan(doc),
        character_notes=reader.character_notes(doc),
        regex_scripts=reader.regex_scripts(doc),
        regex_allowed=reader.regex_allowed(doc),
        preset_regex_scripts=reader.preset_regex_scripts(
            doc, oai, str(oai.get("preset_settings_openai") or "")
        ),
        raw_regex_enabled=reader.regex_enabled(doc),
        global_variables=reader.global_variables(doc),
        summary=reader.summary(doc),
        raw=doc,
    )


def summary_settings(doc: Mapping[str, Any], *, file: str | None = None) -> SummarySettings:
    """The Summarize settings of SillyTavern's `settings.json` (`extension_settings.memory`).

    Read as SillyTavern 1.12.6 reads them: a missing `memory` object or `source` means its
    default source, the Extras API, which places no summary (memory/index.js).
    """
    reader = _SettingsReader(file)
    extensions = reader.obj(doc, "extension_settings")
    disabled = extensions.get("disabledExtensions") or []
    enabled = not (isinstance(disabled, list) and "memory" in disabled)
    memory = reader.obj(extensions, "memory", "extension_settings.")
    settings = SummarySettings.from_st(memory, missing_source=SummarySource.EXTRAS)
    return replace(settings, enabled=enabled)


# SillyTavern's API ids that key `preset_allowed_regex`: each API's presets are its own.
CHAT_COMPLETION_API = "openai"
TEXT_COMPLETION_API = "textgenerationwebui"


def preset_regex_allowed(
    data: Mapping[str, Any], api: str = CHAT_COMPLETION_API, *, file: str | None = None
) -> tuple[str, ...]:
    """The presets of an API whose own regex scripts may run
    (`extension_settings.preset_allowed_regex.<api>`: preset names)."""
    return _SettingsReader(file).preset_regex_allowed(
        settings_document(data, "settings", file), api
    )


def preset_regex_scripts(
    preset: Mapping[str, Any], *, file: str | None = None
) -> tuple[RegexScript, ...]:
    """A preset's own regex scripts (`extensions.regex_scripts`), migrated as on load."""
    return _SettingsReader(file).scripts_of(preset, "extensions.regex_scripts")


def read_extension_choices(
    data: Mapping[str, Any], *, file: str | None = None
) -> tuple[Mapping[str, Any], tuple[str, ...]]:
    """From a settings-shaped document: the global variables and the card files whose own
    regex scripts may run (`extension_settings.variables.global`,
    `extension_settings.character_allowed_regex`), as `read_settings` reads them."""
    doc = settings_document(data, "settings", file)
    reader = _SettingsReader(file)
    return reader.global_variables(doc), reader.regex_allowed(doc)


def chosen_chat_completion(
    data: Mapping[str, Any], *, file: str | None = None
) -> ChatCompletionSettings:
    """A Chat Completion preset file (the keys of `oai_settings`), as `read_settings` reads it.

    A malformed field raises FormatError naming it (without the `oai_settings.` prefix).
    """
    doc = settings_document(data, "a preset", file)
    return read_chat_completion(SettingsReader(file), doc, "")


def chosen_instruct_template(
    data: Mapping[str, Any], *, file: str | None = None
) -> InstructTemplate:
    """An instruct template file as `read_settings` reads `power_user.instruct`: migrated."""
    doc = settings_document(data, "an instruct template", file)
    return _SettingsReader(file).instruct(doc, "")


def chosen_context_template(data: Mapping[str, Any], *, file: str | None = None) -> ContextTemplate:
    """A context template file as `read_settings` reads `power_user.context`: a key it
    lacks keeps a new install's value."""
    doc = settings_document(data, "a context template", file)
    return _SettingsReader(file).template(ContextTemplate, DEFAULT_CONTEXT_TEMPLATE, doc, "")


def read_power_user_settings(
    data: Mapping[str, Any], *, file: str | None = None
) -> PowerUserSettings:
    """SillyTavern's `power_user` object (the prompt-relevant switches)."""
    return _SettingsReader(file).power_user(settings_document(data, "power-user settings", file))


def read_world_info_settings(
    data: Mapping[str, Any], *, file: str | None = None
) -> WorldInfoSettings:
    """SillyTavern's `world_info_settings` object (scan depth, budget, global selection...)."""
    return _SettingsReader(file).world_info(settings_document(data, "world info settings", file))


# Keys of a template in the settings that a template file does not hold (formats-presets.md §2.1).
_SETTINGS_ONLY = frozenset({"enabled", "bind_to_context", "preset"})
T = TypeVar("T", InstructTemplate, ContextTemplate, SystemPromptPreset)


class _SettingsReader(SettingsReader):
    """The parts of a settings document, each read into what assembly needs."""

    # ------------------------------------------------------------ text completion

    def text_completion(
        self, doc: Mapping[str, Any], power: Mapping[str, Any]
    ) -> TextCompletionSettings:
        instruct = self.obj(power, "instruct", "power_user.")
        context = self.obj(power, "context", "power_user.")
        sysprompt = self.obj(power, "sysprompt", "power_user.")
        textgen = self.obj(doc, "textgenerationwebui_settings")
        return TextCompletionSettings(
            instruct=self.instruct(instruct, "power_user.instruct."),
            instruct_enabled=self.bool_(instruct, "enabled", False, "power_user.instruct."),
            context=self.template(
                ContextTemplate, DEFAULT_CONTEXT_TEMPLATE, context, "power_user.context."
            ),
            system_prompt=self.template(
                SystemPromptPreset, DEFAULT_SYSTEM_PROMPT, sysprompt, "power_user.sysprompt."
            ),
            system_prompt_enabled=self.bool_(sysprompt, "enabled", True, "power_user.sysprompt."),
            api_type=self.str_(textgen, "type", "ooba", "textgenerationwebui_settings."),
            max_context=self.int_(doc, "max_context", 8192),
            amount_gen=self.int_(doc, "amount_gen", 350),
            sampling=dict(textgen),
            extras={"api_server": doc.get("api_server", ""), "settings": doc},
        )

    def instruct(self, doc: Mapping[str, Any], path: str) -> InstructTemplate:
        return self.template(InstructTemplate, DEFAULT_INSTRUCT_TEMPLATE, doc, path).migrated()

    def template(self, kind: type[T], defaults: T, doc: Mapping[str, Any], path: str) -> T:
        """A template the settings hold (or a file read as one): the keys it lacks keep
        `defaults`; the settings-only keys are left out, `preset` naming it when `name` is
        absent (formats-presets.md §2.1, §3). A 1.9 context template's `storyString` is
        its story string, in the placeholders of later releases."""
        values = {
            key: value
            for key, value in doc.items()
            if key not in _SETTINGS_ONLY and value is not None
        }
        if "name" not in values and isinstance(doc.get("preset"), str):
            values["name"] = doc["preset"]
        legacy = doc.get("storyString")
        if kind is ContextTemplate and "story_string" not in doc and isinstance(legacy, str):
            values["story_string"] = migrated_story_string(legacy)
        for key, value in defaults.to_json().items():
            values.setdefault(key, value)
        # as strict as the rest of this reader: a value of the wrong type is an error
        prefix = path.rstrip(".") or None
        return validate(kind, values, file=self.file, prefix=prefix, loose=False)

    # --------------------------------------------------------------- power user

    def power_user(self, power: Mapping[str, Any]) -> PowerUserSettings:
        path = "power_user."
        base = PowerUserSettings()
        values: dict[str, Any] = {}
        for f in fields(PowerUserSettings):
            if f.name not in power:
                continue
            default = getattr(base, f.name)
            if isinstance(default, bool):
                values[f.name] = self.bool_(power, f.name, default, path)
            elif isinstance(default, int):
                values[f.name] = self.int_(power, f.name, default, path)
            elif isinstance(default, str):
                values[f.name] = self.str_(power, f.name, default, path)
        context = power.get("context")
        # A context template carries these global switches (formats-presets.md §3).
        if isinstance(context, dict):
            for key in ("always_force_name2", "trim_sentences", "single_line"):
                if isinstance(context.get(key), bool) and key not in power:
                    values[key] = context[key]
        return PowerUserSettings(**values)

    def world_info(
        self, wi: Mapping[str, Any], path: str = "world_info_settings."
    ) -> WorldInfoSettings:
        """The world-info settings; a key the object lacks keeps a new install's value."""
        selection = self.obj(wi, "world_info", path)
        chosen = selection.get("globalSelect", [])
        if not isinstance(chosen, list) or not all(isinstance(x, str) for x in chosen):
            raise self.fail(path + "world_info.globalSelect", "a list of names", chosen)
        base = DEFAULT_WORLD_INFO
        budget = self.int_(wi, "world_info_budget", int(base.budget_percent), path)
        strategy = self.int_(wi, "world_info_character_strategy", base.character_strategy, path)
        return WorldInfoSettings(
            global_select=tuple(chosen),
            depth=self.int_(wi, "world_info_depth", base.depth, path),
            min_activations=self.int_(wi, "world_info_min_activations", 0, path),
            min_activations_depth_max=self.int_(
                wi, "world_info_min_activations_depth_max", 0, path
            ),
            budget_percent=25 if budget > 100 else budget,  # algo-world-info.md §0 migration
            budget_cap=self.int_(wi, "world_info_budget_cap", 0, path),
            include_names=self.bool_(wi, "world_info_include_names", base.include_names, path),
            recursive=self.bool_(wi, "world_info_recursive", base.recursive, path),
            case_sensitive=self.bool_(wi, "world_info_case_sensitive", False, path),
            match_whole_words=self.bool_(
                wi, "world_info_match_whole_words", base.match_whole_words, path
            ),
            # algo-world-info.md §1 step 4: a strategy SillyTavern does not know acts as evenly
            character_strategy=CharacterStrategy(strategy)
            if strategy in tuple(CharacterStrategy)
            else CharacterStrategy.EVENLY,
            use_group_scoring=self.bool_(wi, "world_info_use_group_scoring", False, path),
            max_recursion_steps=self.int_(wi, "world_info_max_recursion_steps", 0, path),
            overflow_alert=self.bool_(wi, "world_info_overflow_alert", False, path),
        )

    def persona(self, doc: Mapping[str, Any], power: Mapping[str, Any]) -> PersonaInfo:
        path = "power_user."
        avatar = self.str_(doc, "user_avatar", "", "")
        name = self.str_(doc, "username", "User", "")
        position = self.int_(power, "persona_description_position", 0, path)
        try:
            persona_position = PersonaPosition(position)
        except ValueError:
            persona_position = PersonaPosition.IN_PROMPT
        if persona_position is PersonaPosition.AFTER_CHAR:
            persona_position = PersonaPosition.IN_PROMPT  # §2.1: migrated when the UI loads
        lorebook = ""
        described = self.obj(power, "persona_descriptions", path).get(avatar)
        if isinstance(described, dict) and isinstance(described.get("lorebook"), str):
            lorebook = described["lorebook"]
        return PersonaInfo(
            name=name,
            description=self.str_(power, "persona_description", "", path),
            position=persona_position,
            depth=self.int_(power, "persona_description_depth", 2, path),
            role=InjectionRole.parse(power.get("persona_description_role", 0)),
            avatar=avatar,
            lorebook=lorebook,
        )

    def authors_note(self, doc: Mapping[str, Any]) -> AuthorsNote:
        note = self.obj(self.obj(doc, "extension_settings"), "note", "extension_settings.")
        path = "extension_settings.note."
        return AuthorsNote(
            prompt=self.str_(note, "default", "", path),
            interval=self.int_(note, "defaultInterval", 1, path),
            depth=self.int_(note, "defaultDepth", 4, path),
            position=self.int_(note, "defaultPosition", 1, path),
            role=int(InjectionRole.parse(note.get("defaultRole", 0))),
        )

    def allow_wi_scan(self, doc: Mapping[str, Any]) -> bool:
        note = self.obj(self.obj(doc, "extension_settings"), "note", "extension_settings.")
        return self.bool_(note, "allowWIScan", False, "extension_settings.note.")

    def regex_scripts(self, doc: Mapping[str, Any]) -> tuple[RegexScript, ...]:
        extensions = self.obj(doc, "extension_settings")
        disabled = extensions.get("disabledExtensions") or []
        if isinstance(disabled, list) and "regex" in disabled:
            return ()
        return self._scripts(extensions.get("regex") or [], "extension_settings.regex")

    def scripts_of(self, holder: Mapping[str, Any], path: str) -> tuple[RegexScript, ...]:
        """The scripts at a dotted `path` of `holder`; none when a part is missing."""
        found: Any = holder
        for key in path.split("."):
            found = found.get(key) if isinstance(found, Mapping) else None
        return self._scripts(found or [], path)

    def _scripts(self, scripts: Any, path: str) -> tuple[RegexScript, ...]:
        if not isinstance(scripts, list):
            raise self.fail(path, "a list", scripts)
        out = []
        for i, item in enumerate(scripts):
            try:
                out.append(RegexScript.from_json(item).migrated())
            except ValidationError as error:
                raise FormatError(
                    f"not a regex script: {error.errors()[0]['msg']}",
                    file=self.file,
                    field=f"{path}[{i}]",
                    code="not_regex_script",
                    params={"value": str(error.errors()[0]["msg"])},
                ) from None
        return tuple(out)

    def preset_regex_allowed(self, doc: Mapping[str, Any], api: str) -> tuple[str, ...]:
        extensions = self.obj(doc, "extension_settings")
        allowed = self.obj(extensions, "preset_allowed_regex", "extension_settings.")
        names = allowed.get(api) or []
        if not isinstance(names, list):
            raise self.fail(f"extension_settings.preset_allowed_regex.{api}", "a list", names)
        return tuple(n for n in names if isinstance(n, str))

    def preset_regex_scripts(
        self, doc: Mapping[str, Any], preset: Mapping[str, Any], name: str
    ) -> tuple[RegexScript, ...]:
        """The chosen Chat Completion preset's scripts, if the person allowed that preset's."""
        if not name or name not in self.preset_regex_allowed(doc, "openai"):
            return ()
        return self.scripts_of(preset, "extensions.regex_scripts")

    def regex_enabled(self, doc: Mapping[str, Any]) -> bool:
        disabled = self.obj(doc, "extension_settings").get("disabledExtensions") or []
        return not (isinstance(disabled, list) and "regex" in disabled)

    def regex_allowed(self, doc: Mapping[str, Any]) -> tuple[str, ...]:
        extensions = self.obj(doc, "extension_settings")
        allowed = extensions.get("character_allowed_regex") or []
        if not isinstance(allowed, list):
            raise self.fail("extension_settings.character_allowed_regex", "a list", allowed)
        return tuple(a for a in allowed if isinstance(a, str))

    def summary(self, doc: Mapping[str, Any]) -> SummarySettings:
        return summary_settings(doc, file=self.file)

    def global_variables(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        path = "extension_settings."
        variables = self.obj(self.obj(doc, "extension_settings"), "variables", path)
        return dict(self.obj(variables, "global", path + "variables."))

    def character_notes(self, doc: Mapping[str, Any]) -> tuple[CharacterNote, ...]:
        extensions = self.obj(doc, "extension_settings")
        note = self.obj(extensions, "note", "extension_settings.")
        chara = note.get("chara", [])
        if not isinstance(chara, list):
            raise self.fail("extension_settings.note.chara", "a list", chara)
        out = []
        positions = {0: "replace", 1: "before", 2: "after"}
        for item in chara:
            if not isinstance(item, dict):
                continue
            out.append(
                CharacterNote(
                    name=str(item.get("name", "")),
                    prompt=str(item.get("prompt", "")),
                    use=bool(item.get("useChara", False)),
                    position=positions.get(int(item.get("position", 0) or 0), "replace"),
                )
            )
        return tuple(out)
