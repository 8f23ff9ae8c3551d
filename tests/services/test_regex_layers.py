"""Regex scripts in three layers (formats-extensions.md §1.1; SillyTavern's regex engine):
global ones, then the chosen preset's, then the character's, the last two only once the
person allowed them; edited through `RegexLibrary` as the page edits them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from taverna.engine.assembly.context import GenerationType
from taverna.engine.assembly.regex_scripts import RegexUse
from taverna.errors import FormatError
from taverna.model.chat import CharacterRef, ChatState, NodeRole
from taverna.model.regex_script import RegexPlacement
from taverna.providers.request import Api
from taverna.services.chats.service import ChatService
from taverna.services.connections.service import ConnectionService
from taverna.services.library.active_settings import set_active
from taverna.services.library.regex_library import RegexLayer, RegexLibrary, try_scripts
from taverna.services.library.service import LibraryKind, LibraryService
from taverna.services.turns import GenerationService
from taverna.services.turns.context import TurnContexts
from taverna.services.turns.paths import PathEnds
from taverna.store.sql import SqlStore, open_store

NOW = datetime(2026, 5, 1, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqlStore]:
    opened = open_store(tmp_path / "data")
    yield opened
    opened.close()


def rule(name: str, find: str, replace: str, **more: Any) -> dict[str, Any]:
    return {"scriptName": name, "findRegex": find, "replaceString": replace,
            "placement": [1, 2], "promptOnly": True, **more}  # fmt: skip


def _prompt_text(store: SqlStore, tmp_path: Path, chat_id: str) -> str:
    turns = TurnContexts(store, clock=lambda: NOW, paths=PathEnds(store))
    service = GenerationService(
        store, ConnectionService(store, tmp_path), turns, paths=turns.paths, clock=lambda: NOW
    )
    chat = store.get_chat(chat_id)
    turn = service.turn(chat, chat.active_leaf_id, GenerationType.NORMAL, Api.OPENAI, dry_run=True)
    return "\n".join(m.content for m in turns.build(turn).prompt.messages)


def _setting_up(store: SqlStore) -> tuple[str, str, str]:
    lib = LibraryService(store)
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Aria",
            "description": "D", "extensions": {"regex_scripts": [rule("c", "/b/g", "c")]}}}  # fmt: skip
    aria = lib.put(LibraryKind.CHARACTER, "Aria", card)
    preset = lib.put(
        LibraryKind.CHAT_COMPLETION_PRESET,
        "Main",
        {"openai_max_context": 4000, "extensions": {"regex_scripts": [rule("p", "/a/g", "b")]}},
    )
    set_active(store, "chat_completion_preset", preset.id)
    chats = ChatService(store)
    chat = chats.create_chat(
        "c", characters=[CharacterRef("Aria", aria.id)], base_state=ChatState()
    ).chat
    chats.append(chat.id, NodeRole.USER, "x", revision=chat.revision)
    return aria.id, preset.id, chat.id


def test_layers_run_global_then_preset_then_character_once_allowed(
    store: SqlStore, tmp_path: Path
) -> None:
    aria, preset, chat_id = _setting_up(store)
    regexes = RegexLibrary(store)
    regexes.save(RegexLayer.GLOBAL, [rule("g", "/x/g", "a")])
    # Only the global layer runs until the person allows the others.
    assert "\na" in "\n" + _prompt_text(store, tmp_path, chat_id)
    assert not regexes.layer(RegexLayer.PRESET, preset).allowed
    regexes.allow(RegexLayer.PRESET, preset, True)
    assert _prompt_text(store, tmp_path, chat_id).endswith("b")  # x -> a -> b
    regexes.allow(RegexLayer.CHARACTER, aria, True)
    assert _prompt_text(store, tmp_path, chat_id).endswith("c")  # x -> a -> b -> c
    assert regexes.layer(RegexLayer.CHARACTER, aria).allowed
    regexes.allow(RegexLayer.PRESET, preset, False)
    assert _prompt_text(store, tmp_path, chat_id).endswith("a")  # the card's b->c finds no b


def test_global_order_edit_and_delete(store: SqlStore, tmp_path: Path) -> None:
    _, _, chat_id = _setting_up(store)
    regexes = RegexLibrary(store)
    saved = regexes.save(RegexLayer.GLOBAL, [rule("one", "/x/g", "y"), rule("two", "/y/g", "z")])
    one, two = saved.scripts
    assert one.id and two.id  # new scripts get ids
    assert _prompt_text(store, tmp_path, chat_id).endswith("z")
    # Reordered: "two" finds no y before "one" makes it.
    regexes.save(RegexLayer.GLOBAL, [two.to_json(), one.to_json()])
    assert [s.script_name for s in regexes.layer(RegexLayer.GLOBAL).scripts] == ["two", "one"]
    assert _prompt_text(store, tmp_path, chat_id).endswith("y")
    # Disabled, then deleted.
    regexes.save(RegexLayer.GLOBAL, [two.to_json(), {**one.to_json(), "disabled": True}])
    assert _prompt_text(store, tmp_path, chat_id).endswith("x")
    regexes.save(RegexLayer.GLOBAL, [two.to_json()])
    assert [s.script_name for s in regexes.layer(RegexLayer.GLOBAL).scripts] == ["two"]
    assert len(store.find_documents("regex_script")) == 1


def test_character_and_preset_scripts_are_saved_in_their_documents(store: SqlStore) -> None:
    aria, preset, _ = _setting_up(store)
    regexes = RegexLibrary(store)
    regexes.save(RegexLayer.CHARACTER, [rule("c2", "/q/", "r")], target=aria)
    card = store.get_document(aria).data
    assert [s["scriptName"] for s in card["data"]["extensions"]["regex_scripts"]] == ["c2"]
    assert card["data"]["name"] == "Aria"
    regexes.save(RegexLayer.PRESET, [], target=preset)
    assert store.get_document(preset).data["extensions"]["regex_scripts"] == []
    assert store.get_document(preset).data["openai_max_context"] == 4000


def test_a_bad_script_names_its_place_and_nothing_is_written(store: SqlStore) -> None:
    regexes = RegexLibrary(store)
    regexes.save(RegexLayer.GLOBAL, [rule("keep", "/x/", "y")])
    with pytest.raises(FormatError) as caught:
        regexes.save(RegexLayer.GLOBAL, [rule("new", "/x/", "y"), {"findRegex": "a"}])
    assert "scripts[1]" in str(caught.value)
    assert [s.script_name for s in regexes.layer(RegexLayer.GLOBAL).scripts] == ["keep"]
    with pytest.raises(FormatError):
        regexes.save(RegexLayer.GLOBAL, [{**rule("n", "a", "b"), "placement": "everywhere"}])


def test_the_test_box_runs_the_same_engine() -> None:
    from taverna.model.regex_script import RegexScript

    scripts = [
        RegexScript.from_json(
            rule("s", "/{{char}}/g", "[$0]", promptOnly=False, substituteRegex=1)
        ),
        RegexScript.from_json(rule("m", "/!/g", "?", promptOnly=False, markdownOnly=True)),
    ]
    text = "Aria waves!"
    stored = try_scripts(scripts, text, placement=RegexPlacement.AI_OUTPUT, use=RegexUse.STORE,
                         char="Aria")  # fmt: skip
    shown = try_scripts(scripts, text, placement=RegexPlacement.AI_OUTPUT, use=RegexUse.DISPLAY,
                        char="Aria")  # fmt: skip
    assert (stored, shown) == ("[Aria] waves!", "Aria waves?")
    assert try_scripts(scripts, text, placement=RegexPlacement.WORLD_INFO, use=RegexUse.STORE,
                       char="Aria") == text  # fmt: skip


def _api_prompt(store: SqlStore, tmp_path: Path, chat_id: str, api: Api) -> str:
    turns = TurnContexts(store, clock=lambda: NOW, paths=PathEnds(store))
    service = GenerationService(
        store, ConnectionService(store, tmp_path), turns, paths=turns.paths, clock=lambda: NOW
    )
    chat = store.get_chat(chat_id)
    prompt = turns.build(
        service.turn(chat, chat.active_leaf_id, GenerationType.NORMAL, api, dry_run=True)
    ).prompt
    return prompt.text if api.is_text_completion else "\n".join(m.content for m in prompt.messages)


def test_a_text_completion_connection_runs_the_text_completion_presets_scripts(
    store: SqlStore, tmp_path: Path
) -> None:
    """SillyTavern keeps preset scripts on the preset of the API in use, each API's
    consent under its own id (`preset_allowed_regex.openai` / `.textgenerationwebui`)."""
    from taverna.services.scripts.message_regex import StoredRegex

    lib = LibraryService(store)
    sent_only = {"placement": [1], "promptOnly": True}
    cc = lib.put(
        LibraryKind.CHAT_COMPLETION_PRESET,
        "Main",
        {"extensions": {"regex_scripts": [rule("cc", "/zqx/g", "CCHIT", **sent_only)]}},
    )
    tc = lib.put(
        LibraryKind.TEXT_COMPLETION_PRESET,
        "Story",
        {
            "temp": 0.7,
            "extensions": {
                "regex_scripts": [
                    rule("tc", "/zqx/g", "TCHIT", **sent_only),
                    rule("kept", "/stored/g", "STORED", placement=[1], promptOnly=False),
                ]
            },
        },
    )
    set_active(store, "chat_completion_preset", cc.id)
    set_active(store, "text_completion_preset", tc.id)
    chats = ChatService(store, rewriter=StoredRegex(store))
    chat = chats.create_chat("c", characters=[CharacterRef("Aria")], base_state=ChatState()).chat
    chat_id = chats.append(chat.id, NodeRole.USER, "zqx", revision=chat.revision).chat.id
    regexes = RegexLibrary(store)
    assert regexes.layer(RegexLayer.PRESET, tc.id).scripts[0].script_name == "tc"
    regexes.allow(RegexLayer.PRESET, cc.id, True)
    text = _api_prompt(store, tmp_path, chat_id, Api.LLAMACPP)
    assert "zqx" in text and "HIT" not in text  # the Text Completion preset is not allowed yet
    regexes.allow(RegexLayer.PRESET, tc.id, True)
    active = store.find_documents("settings", name="active")[-1].data
    assert active["extension_settings"]["preset_allowed_regex"] == {
        "openai": ["Main"],
        "textgenerationwebui": ["Story"],
    }
    text = _api_prompt(store, tmp_path, chat_id, Api.LLAMACPP)
    assert "TCHIT" in text and "CCHIT" not in text and "zqx" not in text
    chat_text = _api_prompt(store, tmp_path, chat_id, Api.OPENAI)
    assert "CCHIT" in chat_text and "TCHIT" not in chat_text
    # What is stored follows the default connection's API too.
    connections = ConnectionService(store, tmp_path)
    connections.add("cloud", "openai", url="http://127.0.0.1:9", key="", default=True)
    revision = chats.get_chat(chat_id).revision
    first = chats.append(chat_id, NodeRole.USER, "stored", revision=revision)
    assert first.node is not None and first.node.content == "stored"
    connections.add("local", "llamacpp", url="http://127.0.0.1:9", default=True)
    connections.add("cloud", "openai", url="http://127.0.0.1:9", default=False)
    second = chats.append(chat_id, NodeRole.USER, "stored", revision=first.chat.revision)
    assert second.node is not None and second.node.content == "STORED"
