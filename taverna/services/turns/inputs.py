"""SillyTavern's settings, cards and chat records turned into the engine's assembly context.

`taverna.formats.st_settings` reads `settings.json`; this module decides, as
SillyTavern does, what one turn's `AssemblyContext` holds: the card fields, the chat
lines, the chat's author's note and locked persona, the books added to characters
and the regex scripts allowed to run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from taverna.engine.assembly.context import (
    AssemblyContext,
    CharacterInfo,
    ChatMessage,
    ChatMetadata,
    GenerationType,
    Speaker,
)
from taverna.formats.st_settings import SillyTavernSettings
from taverna.model.chat import AuthorsNote
from taverna.model.injection import InjectionRole
from taverna.model.lorebook import Lorebook
from taverna.model.persona import PersonaPosition
from taverna.model.regex_script import RegexScript
from taverna.model.settings import PersonaInfo
from taverna.providers.request import Api


def for_api(settings: SillyTavernSettings, api: Api) -> SillyTavernSettings:
    """The settings as a request to `api` uses them: its own source's model (a preset
    keeps one per source), not the one of the source the preset was saved with; for a
    Text Completion API, the Text Completion preset's own regex scripts in place of the
    Chat Completion preset's (regex/engine.js: the scripts of the preset of the API in use)."""
    if api.is_text_completion:
        return replace(settings, preset_regex_scripts=settings.text_preset_regex_scripts)
    cc = settings.chat_completion
    source = api.st_source(cc.source)
    if source is None or source == cc.source:
        return settings
    return replace(settings, chat_completion=cc.for_source(source))


def character_info(character: Any, avatar: str = "") -> CharacterInfo:
    """The assembly's view of a card (`taverna.model.character.Character`)."""
    extensions = character.extensions
    talkativeness = extensions.talkativeness
    try:
        talk = float(talkativeness) if talkativeness not in (None, "") else 0.5
    except (TypeError, ValueError):
        talk = 0.5
    return CharacterInfo(
        name=character.name,
        description=character.description,
        personality=character.personality,
        scenario=character.scenario,
        mes_example=character.mes_example,
        first_mes=character.first_mes,
        system_prompt=character.system_prompt,
        post_history_instructions=character.post_history_instructions,
        depth_prompt=character.depth_prompt,
        talkativeness=talk,
        linked_lorebook=extensions.world or "",
        embedded_lorebook=character.character_book,
        avatar=avatar,
        regex_scripts=tuple(script.migrated() for script in character.regex_scripts),
        version=character.character_version or "",
    )


def chat_messages(messages: Sequence[Any]) -> tuple[ChatMessage, ...]:
    """The assembly's view of SillyTavern chat lines (`taverna.formats.st_chat.MessageLine`)."""
    out = []
    for index, message in enumerate(messages):
        fields_ = message.fields
        extra = message.extra
        if message.is_user:
            speaker = Speaker.USER
        elif message.is_narrator:
            speaker = Speaker.NARRATOR
        else:
            speaker = Speaker.CHARACTER
        swipes = message.swipes
        bias = extra.get("bias")
        out.append(
            ChatMessage(
                id=str(index),
                speaker=speaker,
                name=message.name,
                text=message.text,
                hidden=message.hidden,
                swipe_index=message.swipe_id or 0,
                swipe_count=len(swipes) if swipes else 1,
                forced_avatar=bool(fields_.get("force_avatar")),
                bias=bias if isinstance(bias, str) else "",
                extras=extra,
            )
        )
    return tuple(out)


def assembly_context(
    settings: SillyTavernSettings,
    characters: Sequence[CharacterInfo],
    chat_metadata: Mapping[str, Any],
    messages: Sequence[ChatMessage],
    lorebooks: Mapping[str, Lorebook],
    *,
    api: str = "openai",
    generation_type: GenerationType = GenerationType.NORMAL,
    group_members: Sequence[str] = (),
    group_name: str = "",
    chat_id: str = "",
    summary: tuple[str, str] | None = None,
) -> AssemblyContext:
    """One turn's context from SillyTavern's own files, deciding what SillyTavern decides.

    The chat's metadata brings its author's note (with the user's defaults where the
    chat has none, as SillyTavern fills them), its lorebook and variables; a persona
    locked to the chat replaces the current one; the per-character note applies to
    the character whose card file it names. `summary` is the chat's summary and the
    message it belongs to; without it, the one the messages carry (`extra.memory`).
    """
    meta = dict(chat_metadata)
    extra_books = character_extra_books(settings.raw)
    chars = tuple(
        replace(c, extra_lorebooks=extra_books.get(c.avatar.rsplit(".", 1)[0], ()))
        if c.avatar
        else c
        for c in characters
    )
    if summary is None:
        summary = latest_summary(messages)
    return AssemblyContext(
        summary=summary[0],
        summary_at=summary[1],
        summary_settings=settings.summary,
        characters=chars,
        regex_scripts=_regex_scripts(settings, chars),
        global_variables=dict(settings.global_variables),
        allow_wi_scan=settings.allow_wi_scan,
        messages=tuple(messages),
        persona=_chat_persona(settings, meta),
        metadata=_metadata(settings, meta, characters, group_members),
        api=api,
        generation_type=generation_type,
        chat_completion=settings.chat_completion,
        text_completion=settings.text_completion,
        power_user=settings.power_user,
        world_info=settings.world_info,
        lorebooks=dict(lorebooks),
        group_members=tuple(group_members),
        group_name=group_name,
        chat_id=chat_id,
    )


def _metadata(
    settings: SillyTavernSettings,
    meta: dict[str, Any],
    characters: Sequence[CharacterInfo],
    group_members: Sequence[str],
) -> ChatMetadata:
    """The chat's metadata: its author's note (the user's defaults where the chat has
    none), the character's own note, its lorebook, scenario and variables."""
    note = settings.authors_note

    def meta_int(key: str, default: int) -> int:
        value = meta.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            return default
        try:
            return int(float(value))
        except ValueError:
            return default

    character = characters[0] if characters else None
    char_note = ""
    char_note_mode = "replace"
    if character is not None and not group_members:
        stem = character.avatar.rsplit(".", 1)[0] if character.avatar else character.name
        for candidate in settings.character_notes:
            if candidate.use and candidate.name == stem:
                char_note, char_note_mode = candidate.prompt, candidate.position
    prompt = meta.get("note_prompt")
    authors_note = AuthorsNote(
        prompt=prompt if isinstance(prompt, str) else note.prompt,
        interval=meta_int("note_interval", note.interval),
        depth=meta_int("note_depth", note.depth),
        position=meta_int("note_position", note.position),
        role=int(InjectionRole.parse(meta.get("note_role"), note.injection_role)),
    )
    variables = meta.get("variables")
    world = meta.get("world_info")
    scenario = meta.get("scenario")
    return ChatMetadata(
        authors_note=authors_note,
        character_note=char_note,
        character_note_mode=char_note_mode,
        lorebook=world if isinstance(world, str) else "",
        scenario=scenario if isinstance(scenario, str) else "",
        variables=dict(variables) if isinstance(variables, dict) else {},
        extras=meta,
    )


def _chat_persona(settings: SillyTavernSettings, meta: Mapping[str, Any]) -> PersonaInfo:
    """The persona of the turn: one locked to the chat replaces the current one."""
    persona = settings.persona
    locked = meta.get("persona")
    power = settings.raw.get("power_user", {})
    if isinstance(locked, str) and isinstance(power, dict):
        names = power.get("personas", {})
        described = power.get("persona_descriptions", {})
        if isinstance(names, dict) and locked in names:
            details = described.get(locked, {}) if isinstance(described, dict) else {}
            details = details if isinstance(details, dict) else {}
            persona = replace(
                persona,
                name=str(names[locked]),
                avatar=locked,
                description=str(details.get("description", "")),
                position=_persona_position(details.get("position", 0)),
                depth=int(details.get("depth", 2) or 2),
                role=InjectionRole.parse(details.get("role", 0)),
                lorebook=str(details.get("lorebook", "") or ""),
            )
    return persona


def _regex_scripts(
    settings: SillyTavernSettings, characters: Sequence[CharacterInfo]
) -> tuple[RegexScript, ...]:
    """The regex scripts that run: formats-extensions.md §1.1, global scripts, then the
    preset's, then the speaker's own, each of the last two only when the person allowed
    them (regex/engine.js order)."""
    scripts = settings.regex_scripts
    if settings.raw_regex_enabled:
        scripts = (*scripts, *settings.preset_regex_scripts)
    if characters and characters[0].avatar in settings.regex_allowed and settings.raw_regex_enabled:
        scripts = (*scripts, *characters[0].regex_scripts)
    return scripts


def latest_summary(messages: Sequence[ChatMessage]) -> tuple[str, str]:
    """The summary SillyTavern places for these messages, and the id of its message.

    algo-chat-ops.md §3.1 (`getLatestMemoryFromChat`): the newest non-empty
    `extra.memory`, the very last message left out.
    """
    for message in reversed(messages[:-1]):
        memory = message.extras.get("memory")
        if memory and isinstance(memory, str):
            return memory, message.id
    return "", ""


def _persona_position(value: Any) -> PersonaPosition:
    try:
        position = PersonaPosition(int(value))
    except (TypeError, ValueError):
        return PersonaPosition.IN_PROMPT
    return PersonaPosition.IN_PROMPT if position is PersonaPosition.AFTER_CHAR else position


def character_extra_books(raw: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Books added to characters in the UI (`world_info.charLore`), by card file stem."""
    wi = raw.get("world_info_settings", {})
    selection = wi.get("world_info", {}) if isinstance(wi, dict) else {}
    lore = selection.get("charLore", []) if isinstance(selection, dict) else []
    out: dict[str, tuple[str, ...]] = {}
    for item in lore if isinstance(lore, list) else []:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            books = item.get("extraBooks", [])
            out[item["name"]] = (
                tuple(b for b in books if isinstance(b, str)) if isinstance(books, list) else ()
            )
    return out
