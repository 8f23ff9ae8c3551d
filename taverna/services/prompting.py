"""The prompt of a stored chat: the library's card, persona, preset and lorebooks put
together as SillyTavern would, then assembled by the engine.

This is the prompt builder the generation service runs for the server; it reads the
library (cards, personas, the active preset and templates, every lorebook by name) and
the chat's path, builds the assembly context, and calls `assemble`.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from taverna.engine.assembly.assemble import assemble
from taverna.engine.assembly.context import (
    ChatMessage,
    GenerationType,
    InjectionRole,
    PersonaInfo,
    PersonaPosition,
    Speaker,
)
from taverna.formats import json_text
from taverna.formats.st_settings import read_settings
from taverna.formats.world_info import world_info_from_json
from taverna.model.chat import Node, NodeRole, effective_state
from taverna.model.persona import Persona
from taverna.model.prompt import Prompt
from taverna.services.generation import (
    PreparedTurn,
    PromptBuilder,
    Turn,
    TurnKind,
    preset_request_options,
)
from taverna.services.library import LibraryKind, LibraryService
from taverna.services.tools import declared_tools
from taverna.services.turn_inputs import assembly_context, character_info
from taverna.store.repository import Store

SETTINGS_KIND = "settings"
ACTIVE = "active"
# What the active-settings document names, by the library kind it points at.
ACTIVE_KINDS = {
    "chat_completion_preset": LibraryKind.CHAT_COMPLETION_PRESET,
    "instruct_template": LibraryKind.INSTRUCT_TEMPLATE,
    "context_template": LibraryKind.CONTEXT_TEMPLATE,
}


def active_choices(store: Store, owner: str = "") -> dict[str, str]:
    """Which preset and templates are in use: library kind -> document id."""
    docs = store.find_documents(SETTINGS_KIND, name=ACTIVE, owner=owner)
    return {k: str(v) for k, v in (docs[-1].data if docs else {}).items() if isinstance(v, str)}


def set_active(store: Store, kind: str, document_id: str, owner: str = "") -> None:
    """Make a preset or template the one in use."""
    docs = store.find_documents(SETTINGS_KIND, name=ACTIVE, owner=owner)
    data = {**(docs[-1].data if docs else {}), kind: document_id}
    store.put_document(
        SETTINGS_KIND,
        ACTIVE,
        data,
        id=docs[-1].id if docs else None,
        revision=docs[-1].revision if docs else None,
        owner=owner,
    )


def _settings_json(lib: LibraryService, owner: str) -> dict[str, Any]:
    """A SillyTavern settings object holding the active preset and templates."""
    chosen = active_choices(lib.store, owner)
    settings: dict[str, Any] = {}
    for key, kind in ACTIVE_KINDS.items():
        doc_id = chosen.get(key)
        if not doc_id:
            continue
        try:
            data = dict(lib.get(kind, doc_id).data)
        except Exception:  # a preset deleted since it was chosen: fall back to the defaults
            continue
        if kind is LibraryKind.CHAT_COMPLETION_PRESET:
            # A chat completion preset holds the same keys as `oai_settings`.
            settings["oai_settings"] = data
        elif kind is LibraryKind.INSTRUCT_TEMPLATE:
            settings.setdefault("power_user", {})["instruct"] = {**data, "enabled": True}
        else:
            settings.setdefault("power_user", {})["context"] = data
    # The library's regex scripts are the global ones (SillyTavern's extension settings).
    scripts = [dict(d.data) for d in lib.documents(LibraryKind.REGEX_SCRIPT)]
    if scripts:
        settings["extension_settings"] = {"regex": scripts}
    return settings


def _persona(lib: LibraryService, user_name: str) -> PersonaInfo:
    personas = [Persona.model_validate(dict(d.data)) for d in lib.documents(LibraryKind.PERSONA)]
    chosen = next((p for p in personas if p.name == user_name), None)
    chosen = chosen or next((p for p in personas if p.is_default), None)
    if chosen is None:
        return PersonaInfo(name=user_name or "User")
    descriptor = chosen.descriptor
    try:
        position = PersonaPosition(int(descriptor.position))
    except ValueError:
        position = PersonaPosition.IN_PROMPT
    return PersonaInfo(
        name=user_name or chosen.name or "User",
        description=descriptor.description,
        position=position,
        depth=int(descriptor.depth),
        role=InjectionRole.parse(descriptor.role),
        avatar=chosen.avatar,
    )


def _message(node: Node, index: int) -> ChatMessage:
    speaker = {
        NodeRole.USER: Speaker.USER,
        NodeRole.NARRATOR: Speaker.NARRATOR,
        NodeRole.SYSTEM: Speaker.NARRATOR,
    }.get(node.role, Speaker.CHARACTER)
    return ChatMessage(
        id=node.id, speaker=speaker, name=node.speaker, text=node.content, hidden=node.hidden
    )


def _lorebooks(lib: LibraryService) -> Mapping[str, Any]:
    books = {}
    for doc in lib.documents(LibraryKind.LOREBOOK):
        books[doc.name] = world_info_from_json(dict(doc.data), name=doc.name, file=doc.name)
    return books


TEXT_APIS = ("koboldcpp", "llamacpp", "openai-text")


def library_prompt_builder(store: Store, *, owner: str = "", clock: Any = None) -> PromptBuilder:
    """A prompt builder over the library in `store` (for GenerationService)."""

    def build(turn: Turn) -> Prompt | PreparedTurn:
        lib = LibraryService(store, owner=owner)
        chat = turn.chat
        characters = []
        for ref in chat.characters:
            if ref.document_id:
                card = lib.character(ref.document_id)
                characters.append(character_info(card.character, avatar=f"{ref.name}.png"))
        if not characters:
            from taverna.engine.assembly.context import CharacterInfo

            characters.append(
                CharacterInfo(name=chat.characters[0].name if chat.characters else "Assistant")
            )
        raw_settings = _settings_json(lib, owner)
        settings = read_settings(json_text.dumps(raw_settings))
        # The state in force before this reply: at the end of the path it answers.
        state = effective_state(turn.history, chat.base_state)
        metadata: dict[str, Any] = dict(chat.metadata)
        metadata["variables"] = dict(state.variables)
        if state.timers:
            metadata["timedWorldInfo"] = dict(state.timers)
        if state.authors_note is not None:
            note = state.authors_note
            metadata.update(
                note_prompt=note.prompt,
                note_interval=note.interval,
                note_position=note.position,
                note_depth=note.depth,
                note_role=note.role,
            )
        # The whole path: for a swipe or regenerate the assembly leaves the replaced reply out.
        messages = [_message(node, i) for i, node in enumerate(turn.path) if not node.deleted]
        kind = {
            TurnKind.NORMAL: GenerationType.NORMAL,
            TurnKind.REGENERATE: GenerationType.REGENERATE,
            TurnKind.SWIPE: GenerationType.SWIPE,
            TurnKind.CONTINUE: GenerationType.CONTINUE,
            TurnKind.IMPERSONATE: GenerationType.IMPERSONATE,
        }[turn.kind]
        members = [c.name for c in chat.characters] if len(chat.characters) > 1 else []
        context = assembly_context(
            settings,
            characters,
            metadata,
            messages,
            _lorebooks(lib),
            api="textgen" if turn.api.value in TEXT_APIS else "openai",
            generation_type=kind,
            group_members=members,
        )
        from dataclasses import replace

        now = clock() if clock else datetime.now(UTC)
        context = replace(
            context,
            persona=_persona(lib, chat.user_name),
            now=now,
            seed=zlib.crc32(chat.id.encode()),
            chat_id=chat.id,
            dry_run=turn.dry_run,
        )
        if turn.prefill and not context.chat_completion.continue_prefill:
            # continue in place where the API allows a prefill; elsewhere the preset's nudge
            settings_cc = replace(context.chat_completion, continue_prefill=True)
            context = replace(context, chat_completion=settings_cc)
        # the preset's function tools (function_calling on, a `tools` list of names) and
        # its request settings (Claude's system prompt, custom post-processing, ...)
        preset = raw_settings.get("oai_settings") or {}
        request = preset_request_options(preset, turn.api)
        return PreparedTurn(assemble(context, counts=turn.counts), declared_tools(preset), request)

    return build
