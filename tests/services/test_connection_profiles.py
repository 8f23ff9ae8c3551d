"""Connections and connection profiles from SillyTavern's settings.json, and switching a
chat to a profile in one go: its connection and model, preset, templates, tokenizer and
stop strings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from taverna.errors import NotFound, TavernaError
from taverna.model.chat import CharacterRef
from taverna.services.chats.service import ChatService
from taverna.services.connections.profiles import Profile, Profiles
from taverna.services.connections.service import ConnectionService
from taverna.services.interchange.library_import import LibraryImport
from taverna.services.library.active_settings import ACTIVE, SETTINGS_KIND, active_choices
from taverna.services.library.service import LibraryKind, LibraryService
from taverna.services.turns.chat_connection import connection_for
from taverna.services.turns.profile_switch import switch_profile
from taverna.store.sql import SqlStore

SETTINGS: dict[str, Any] = {
    "main_api": "textgenerationwebui",
    "oai_settings": {
        "chat_completion_source": "openrouter",
        "openrouter_model": "anthropic/claude-3.5-sonnet",
        "claude_model": "claude-3-5-sonnet-20240620",
        "reverse_proxy": "https://proxy.example/v1",
    },
    "textgenerationwebui_settings": {
        "type": "koboldcpp",
        "server_urls": {"koboldcpp": "http://127.0.0.1:5001", "ooba": "http://127.0.0.1:5000"},
    },
    "extension_settings": {
        "connectionManager": {
            "selectedProfile": "p1",
            "profiles": [
                {
                    "id": "p1",
                    "name": "Sonnet",
                    "mode": "cc",
                    "api": "claude",
                    "preset": "Long stories",
                    "model": "claude-3-5-sonnet-20240620",
                    "stop-strings": "",
                },
                {
                    "id": "p2",
                    "name": "Local Mistral",
                    "mode": "tc",
                    "api": "ooba",
                    "api-url": "http://127.0.0.1:5000",
                    "model": "mistral-nemo",
                    "instruct": "ChatML",
                    "context": "ChatML",
                    "sysprompt": "Roleplay",
                    "sysprompt-state": "true",
                    "tokenizer": "llama3",
                    "stop-strings": '["\\nUser:", "</s>"]',
                    "start-reply-with": "",
                },
                {"id": "p3", "name": "Old extension", "mode": "cc", "api": "windowai"},
            ],
        }
    },
}


def _import(store: SqlStore, tmp_path: Path) -> tuple[Any, ConnectionService]:
    folder = tmp_path / "user"
    (folder / "chats").mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text(json.dumps(SETTINGS), encoding="utf-8")
    connections = ConnectionService(store, tmp_path)
    report = LibraryImport(LibraryService(store), connections).import_path(folder)
    return report, connections


def test_the_settings_bring_their_apis_and_profiles_as_connections(
    store: SqlStore, tmp_path: Path
) -> None:
    report, connections = _import(store, tmp_path)
    made = {c.name: c for c in connections.list()}
    assert set(made) == {
        "KoboldCpp (SillyTavern)",
        "OpenRouter (SillyTavern)",
        "Claude (Anthropic) (SillyTavern)",
        "text-generation-webui (SillyTavern)",
    }
    kobold = made["KoboldCpp (SillyTavern)"]
    # SillyTavern was on Text Completion: its API is the default here
    assert kobold.default and kobold.url == "http://127.0.0.1:5001"
    router = made["OpenRouter (SillyTavern)"]
    # OpenRouter takes no reverse proxy: its own address
    assert (router.url, router.model) == (
        "https://openrouter.ai/api/v1",
        "anthropic/claude-3.5-sonnet",
    )
    assert router.options["source"] == "openrouter" and not router.key_ref
    claude = made["Claude (Anthropic) (SillyTavern)"]
    # the profile names no proxy: Claude's own address
    assert (claude.url, claude.model) == (
        "https://api.anthropic.com/v1",
        "claude-3-5-sonnet-20240620",
    )
    # a server address as SillyTavern keeps it, under /v1 as the OpenAI-style API takes it
    assert made["text-generation-webui (SillyTavern)"].url == "http://127.0.0.1:5000/v1"
    profiles = {p.name: p for p in Profiles(store).list()}
    assert set(profiles) == {"Sonnet", "Local Mistral"}
    local = profiles["Local Mistral"]
    assert (local.connection, local.mode, local.model) == (
        "text-generation-webui (SillyTavern)", "tc", "mistral-nemo",
    )  # fmt: skip
    assert (local.instruct, local.tokenizer_id, local.stop_strings) == (
        "ChatML",
        12,
        ("\nUser:", "</s>"),
    )
    assert local.sysprompt_enabled is True
    assert profiles["Sonnet"].stop_strings is None  # "" leaves the stop strings as they are
    kinds = [(i.kind, i.name) for i in report.stored if i.kind.startswith("connection")]
    assert ("connection_profile", "Sonnet") in kinds and (
        "connection",
        "OpenRouter (SillyTavern)",
    ) in kinds
    skipped = [s for s in report.skipped if s.code == "profile_api_unknown"]
    assert len(skipped) == 1 and "windowai" in skipped[0].reason


def test_importing_again_keeps_the_connections_made_and_changed(
    store: SqlStore, tmp_path: Path
) -> None:
    _, connections = _import(store, tmp_path)
    connections.add("OpenRouter (SillyTavern)", "openrouter", model="mine/own", key="sk-or-1")
    _import(store, tmp_path)
    again = connections.get("OpenRouter (SillyTavern)")
    assert again.model == "mine/own" and again.key_ref
    assert len(connections.list()) == 4


def test_switching_to_a_profile_sets_the_chat_and_the_settings_in_use(
    store: SqlStore, tmp_path: Path
) -> None:
    _, connections = _import(store, tmp_path)
    library = LibraryService(store)
    preset = library.put(LibraryKind.CHAT_COMPLETION_PRESET, "Long stories", {"temperature": 0.9})
    chatml = library.put(
        LibraryKind.INSTRUCT_TEMPLATE,
        "ChatML",
        {
            "name": "ChatML",
            "input_sequence": "<|im_start|>user",
            "output_sequence": "<|im_start|>assistant",
        },
    )
    chats = ChatService(store)
    chat = chats.create_chat("Aria", characters=[CharacterRef("Aria")], greetings=["Hi."]).chat
    done = switch_profile(chats, connections, chat.id, "Sonnet", revision=chat.revision)
    assert done.applied == ["connection", "model", "preset"] and done.missing == []
    used = connection_for(connections, done.chat)
    assert (used.name, used.model) == (
        "Claude (Anthropic) (SillyTavern)",
        "claude-3-5-sonnet-20240620",
    )
    assert active_choices(store)["chat_completion_preset"] == preset.id

    done = switch_profile(chats, connections, chat.id, "Local Mistral", revision=done.chat.revision)
    # the context template is not in the library: left as it was, and said
    assert done.missing == ["context"]
    assert "instruct" in done.applied and "tokenizer" in done.applied
    assert active_choices(store)["instruct_template"] == chatml.id
    assert connection_for(connections, done.chat).model == "mistral-nemo"
    power = store.find_documents(SETTINGS_KIND, name=ACTIVE)[-1].data["power_user"]
    assert power["tokenizer"] == 12
    assert json.loads(power["custom_stopping_strings"]) == ["\nUser:", "</s>"]
    with pytest.raises(NotFound):
        switch_profile(chats, connections, chat.id, "Nobody", revision=done.chat.revision)


def test_a_profile_is_checked_before_it_is_kept(store: SqlStore) -> None:
    profiles = Profiles(store)
    with pytest.raises(TavernaError) as raised:
        profiles.put(Profile("P", "c", tokenizer="klingon"))
    assert raised.value.field == "tokenizer"
    with pytest.raises(TavernaError):
        profiles.put(Profile("P", ""))
    kept = profiles.put(Profile("P", "c", tokenizer="best_match", stop_strings=()))
    assert profiles.get("P") == kept and kept.tokenizer_id == 99
    profiles.delete("P")
    assert profiles.list() == []
