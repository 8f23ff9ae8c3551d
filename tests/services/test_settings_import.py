"""A SillyTavern settings.json of any release taken into the library: each part where it
belongs, and the next turn built with it."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

from taverna.engine.assembly.context import GenerationType
from taverna.model.chat import ChatState
from taverna.providers.request import Api
from taverna.services.chats.service import ChatService
from taverna.services.connections.service import ConnectionService
from taverna.services.interchange import InterchangeService
from taverna.services.interchange.library_import import LibraryImport
from taverna.services.library.active_settings import ACTIVE, SETTINGS_KIND, active_choices
from taverna.services.library.service import LibraryKind, LibraryService
from taverna.services.turns import GenerationService
from taverna.services.turns.context import TurnContexts
from taverna.services.turns.paths import PathEnds
from taverna.store.sql import SqlStore

FILES = Path(__file__).resolve().parents[1] / "sillytavern_files"
NOW = datetime(2026, 5, 1, tzinfo=UTC)


def settings_folder(tmp_path: Path, name: str) -> Path:
    """A user data folder holding `name` as its settings.json and a persona picture."""
    folder = tmp_path / "user"
    (folder / "User Avatars").mkdir(parents=True)
    (folder / "chats").mkdir()
    (folder / "User Avatars" / "wren.png").write_bytes(b"\x89PNG\r\n\x1a\npicture")
    shutil.copy(FILES / name, folder / "settings.json")
    return folder


def names(store: SqlStore, kind: LibraryKind) -> list[str]:
    return [d.name for d in store.find_documents(kind.value)]


def active(store: SqlStore) -> dict[str, object]:
    return dict(store.find_documents(SETTINGS_KIND, name=ACTIVE)[-1].data)


def test_current_settings_go_where_they_belong(store: SqlStore, tmp_path: Path) -> None:
    folder = settings_folder(tmp_path, "settings.json")
    report = LibraryImport(LibraryService(store)).import_path(folder)
    # only the picture that is not there
    assert [s.path for s in report.skipped] == [str(folder / "User Avatars" / "ferryman.png")]
    assert sorted(names(store, LibraryKind.PERSONA)) == ["The Ferryman", "Wren"]
    assert names(store, LibraryKind.REGEX_SCRIPT) == ["Trim asterisks"]
    assert names(store, LibraryKind.INSTRUCT_TEMPLATE) == ["Harbour ChatML"]
    assert names(store, LibraryKind.CONTEXT_TEMPLATE) == ["Harbour Context"]
    assert names(store, LibraryKind.SYSTEM_PROMPT) == ["Harbour Narrator"]
    assert names(store, LibraryKind.REASONING_TEMPLATE) == ["Angle Brackets"]
    assert names(store, LibraryKind.CHAT_COMPLETION_PRESET) == ["Harbour (settings.json)"]
    chosen = active_choices(store)
    by_id = {d.id: d.name for d in store.find_documents(LibraryKind.INSTRUCT_TEMPLATE.value)}
    assert by_id[chosen["instruct_template"]] == "Harbour ChatML"
    settings = active(store)
    assert settings["world_info_settings"]["world_info"]["globalSelect"] == [  # type: ignore[index]
        "Harbour Town",
        "Old Roads",
    ]
    assert settings["extension_settings"] == {
        "variables": {"global": {"tide": "high", "visits": 3}},
        "character_allowed_regex": [],
    }
    power = settings["power_user"]
    assert isinstance(power, dict) and power["always_force_name2"] is True
    assert "personas" not in power and "instruct" not in power
    # the instruct template as its own file would be, named
    stored = store.find_documents(LibraryKind.INSTRUCT_TEMPLATE.value)[-1].data
    assert stored["name"] == "Harbour ChatML" and "preset" not in stored


def test_19_settings_with_one_book_named_at_the_top_level(store: SqlStore, tmp_path: Path) -> None:
    LibraryImport(LibraryService(store)).import_path(settings_folder(tmp_path, "settings-1.9.json"))
    assert names(store, LibraryKind.PERSONA) == ["Wren"]
    settings = active(store)
    assert settings["world_info_settings"]["world_info"] == {"globalSelect": ["Harbour Town"]}  # type: ignore[index]
    preset = store.find_documents(LibraryKind.CHAT_COMPLETION_PRESET.value)[-1]
    assert preset.name == "Default (settings.json)"
    assert preset.data["chat_completion_source"] == "claude"
    assert preset.data["claude_model"] == "claude-instant-v1"
    assert "username" not in preset.data and "world_info" not in preset.data
    # the instruct template SillyTavern had switched off is kept, not chosen
    assert names(store, LibraryKind.INSTRUCT_TEMPLATE) == ["Alpaca"]
    assert "instruct_template" not in active_choices(store)


def test_the_oldest_settings_import_too(store: SqlStore, tmp_path: Path) -> None:
    report = LibraryImport(LibraryService(store)).import_path(
        settings_folder(tmp_path, "settings-tavernai.json")
    )
    assert not [s for s in report.skipped if "settings" in s.path]
    assert active(store)["world_info_settings"] == {
        "world_info_depth": 2,
        "world_info_budget": 200,
    }


def test_a_settings_file_imported_alone(store: SqlStore, tmp_path: Path) -> None:
    folder = settings_folder(tmp_path, "settings.json")
    LibraryImport(LibraryService(store)).import_paths([folder / "settings.json"], strict=True)
    assert sorted(names(store, LibraryKind.PERSONA)) == ["The Ferryman", "Wren"]
    extensions = active(store)["extension_settings"]
    assert extensions["variables"] == {"global": {"tide": "high", "visits": 3}}  # type: ignore[index]


def test_the_next_turn_uses_the_imported_settings(store: SqlStore, tmp_path: Path) -> None:
    LibraryImport(LibraryService(store)).import_path(settings_folder(tmp_path, "settings.json"))
    chat = (
        ChatService(store)
        .create_chat("c", greetings=["Hello {{user}}."], base_state=ChatState())
        .chat
    )
    turns = TurnContexts(store, clock=lambda: NOW, paths=PathEnds(store))
    service = GenerationService(
        store, ConnectionService(store, tmp_path), turns, paths=turns.paths, clock=lambda: NOW
    )
    turn = service.turn(
        chat, chat.active_leaf_id, GenerationType.NORMAL, Api.ANTHROPIC, dry_run=True
    )
    context = turns.context(turn, turns.library(chat), turn.tail(10), NOW)
    assert context.global_variables == {"tide": "high", "visits": 3}
    assert context.world_info.global_select == ("Harbour Town", "Old Roads")
    assert context.power_user.always_force_name2 is True
    assert context.text_completion.instruct.input_sequence == "<|im_start|>user"
    # Claude's own model from the settings, not the OpenAI one they were saved with
    assert context.chat_completion.model == "claude-3-5-haiku-20241022"


def test_a_chat_comes_back_byte_for_byte_through_the_store(store: SqlStore, tmp_path: Path) -> None:
    # CRLF, a final newline, TavernAI's header, a greeting shown with its names filled in
    # beside its six raw swipes, a null swipe_info
    path = FILES / "Mira - 2024-10-02@19h11m05s.jsonl"
    interchange = InterchangeService(store)
    (result,) = interchange.import_files([path], find_linked=False)
    assert result.nodes == 8  # six greetings, a message, a reply
    (written,) = interchange.export_to(result.chat.id, tmp_path / "out")
    assert written.read_bytes() == path.read_bytes()
    assert interchange.export_jsonl(result.chat.id).encode() == path.read_bytes()


def test_the_folders_default_persona_is_the_only_default(store: SqlStore, tmp_path: Path) -> None:
    from taverna.model.persona import Persona

    lib = LibraryService(store)
    lib.put_persona(Persona(avatar="", name="User", is_default=True))
    LibraryImport(lib).import_path(settings_folder(tmp_path, "settings.json"))
    marked = [
        d.name
        for d in store.find_documents(LibraryKind.PERSONA.value)
        if Persona.model_validate(dict(d.data)).is_default
    ]
    assert marked == ["Wren"]
