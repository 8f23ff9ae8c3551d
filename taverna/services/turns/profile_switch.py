"""Switching to a connection profile: the chat talks to its connection and model from the
next turn on, and its preset, templates, tokenizer and stop strings become the ones in use
(those are the person's, for every chat, as SillyTavern's are). A part the profile leaves
empty, or names but the library lacks, is left as it is and said so."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from taverna.model.chat import Chat
from taverna.services.chats.service import ChatService
from taverna.services.connections.profiles import TEXT_MODE, Profile, Profiles
from taverna.services.connections.service import ConnectionService
from taverna.services.library.active_settings import (
    ACTIVE,
    SETTINGS_KIND,
    SYSPROMPT_ENABLED,
    set_active,
)
from taverna.services.library.service import LibraryKind, LibraryService
from taverna.services.turns.chat_connection import choose

POWER_USER = "power_user"  # the active settings' SillyTavern `power_user` values


@dataclass(frozen=True, slots=True)
class Switched:
    """What switching to a profile did: the chat as it now is, the parts taken, and the
    parts it named that the library does not have (left as they were)."""

    chat: Chat
    profile: Profile
    applied: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def switch_profile(
    chats: ChatService,
    connections: ConnectionService,
    chat_id: str,
    name: str,
    *,
    revision: int,
) -> Switched:
    """Use the profile `name` in the chat `chat_id` (at `revision`) and for what follows."""
    store, owner = connections.store, connections.owner
    profile = Profiles(store, owner).get(name)
    chat = choose(
        chats, connections, chat_id, profile.connection, profile.model or None, revision=revision
    )
    done = Switched(chat, profile, ["connection"] + (["model"] if profile.model else []))
    library = LibraryService(store, owner=owner)
    preset_kind, preset_key = (
        (LibraryKind.TEXT_COMPLETION_PRESET, "text_completion_preset")
        if profile.mode == TEXT_MODE
        else (LibraryKind.CHAT_COMPLETION_PRESET, "chat_completion_preset")
    )
    for part, kind, key, wanted in (
        ("preset", preset_kind, preset_key, profile.preset),
        ("instruct", LibraryKind.INSTRUCT_TEMPLATE, "instruct_template", profile.instruct),
        ("context", LibraryKind.CONTEXT_TEMPLATE, "context_template", profile.context),
    ):
        if not wanted:
            continue
        found = library.find(kind, wanted)
        if found is None:
            done.missing.append(part)
            continue
        set_active(store, key, found.id, owner)
        done.applied.append(part)
    if profile.sysprompt_enabled is not None:
        set_active(store, SYSPROMPT_ENABLED, profile.sysprompt_enabled, owner)
        done.applied.append("sysprompt-state")
    changed = _power_user_changes(profile)
    if changed:
        set_active(store, POWER_USER, {**_power_user(connections), **changed}, owner)
        done.applied.extend(sorted(changed))
    return done


def _power_user_changes(profile: Profile) -> dict[str, Any]:
    """The `power_user` values the profile sets: tokenizer, stop strings, reply start."""
    changed: dict[str, Any] = {}
    if profile.tokenizer_id is not None:
        changed["tokenizer"] = profile.tokenizer_id
    if profile.stop_strings is not None:
        changed["custom_stopping_strings"] = json.dumps(list(profile.stop_strings))
    if profile.start_reply_with:
        changed["user_prompt_bias"] = profile.start_reply_with
    return changed


def _power_user(connections: ConnectionService) -> dict[str, Any]:
    docs = connections.store.find_documents(SETTINGS_KIND, name=ACTIVE, owner=connections.owner)
    found = docs[-1].data.get(POWER_USER) if docs else None
    return dict(found) if isinstance(found, dict) else {}
