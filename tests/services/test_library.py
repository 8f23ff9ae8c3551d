"""The library: single files of every kind and whole SillyTavern data folders."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from taverna.errors import FormatError
from taverna.formats.st_chat import read_chat
from taverna.model.presets import ChatCompletionPreset, InstructTemplate
from taverna.services.interchange import InterchangeService
from taverna.services.interchange.library_import import LibraryImport
from taverna.services.interchange.report import Progress
from taverna.services.library.service import LibraryKind, LibraryService
from taverna.store.sql import SqlStore


@pytest.fixture
def library(store: SqlStore) -> LibraryService:
    return LibraryService(store)


def user_data_folder(st_fixtures: Path, oracle_cases: Path, target: Path) -> Path:
    """A SillyTavern user data folder assembled from the fixtures."""
    shutil.copytree(st_fixtures / "handmade" / "user-data", target)
    (target / "characters").mkdir()
    shutil.copy(
        st_fixtures / "content" / "default_Seraphina.png", target / "characters" / "Seraphina.png"
    )
    shutil.copy(
        st_fixtures / "handmade" / "cards" / "Kael.v3.json", target / "characters" / "Kael.json"
    )
    (target / "characters" / "Broken.json").write_text("{not json", encoding="utf-8")
    folders = {
        "openai": "OpenAI Settings",
        "instruct": "instruct",
        "context": "context",
        "sysprompt": "sysprompt",
        "textgen": "TextGen Settings",
    }
    for source, name in folders.items():
        shutil.copytree(st_fixtures / "presets" / source, target / name)
    shutil.copy(
        st_fixtures / "presets" / "quick-replies" / "Default.json",
        target / "QuickReplies" / "Default.json",
    )
    shutil.copy(oracle_cases / "01_seraphina_basic" / "settings.json", target / "settings.json")
    (target / "thumbnails").mkdir()
    return target


def test_single_files_of_each_kind(library: LibraryService, st_fixtures: Path) -> None:
    card = (
        LibraryImport(library)
        .import_path(st_fixtures / "content" / "default_Seraphina.png")
        .stored[0]
    )
    assert (card.kind, card.name) == ("character", "Seraphina")
    stored = library.character(card.id)
    assert stored.character.name == "Seraphina"
    assert stored.avatar is not None and stored.avatar.startswith(b"\x89PNG")
    book = LibraryImport(library).import_path(st_fixtures / "content" / "Eldoria.json").stored[0]
    assert library.lorebook(book.id).name == "Eldoria"
    assert len(library.lorebook(book.id).entries) == 4
    preset = (
        LibraryImport(library)
        .import_path(st_fixtures / "presets" / "openai" / "Default.json")
        .stored[0]
    )
    assert isinstance(
        library.item(LibraryKind.CHAT_COMPLETION_PRESET, preset.id), ChatCompletionPreset
    )
    template = (
        LibraryImport(library)
        .import_path(st_fixtures / "presets" / "instruct" / "ChatML.json")
        .stored[0]
    )
    loaded = library.item(LibraryKind.INSTRUCT_TEMPLATE, template.id)
    assert isinstance(loaded, InstructTemplate) and loaded.name == "ChatML"
    regex = LibraryImport(library).import_path(
        st_fixtures / "handmade" / "exports" / "strip_ooc_notes.json"
    )
    assert regex.stored[0].kind == "regex_script"


def test_importing_twice_replaces_instead_of_copying(
    library: LibraryService, st_fixtures: Path
) -> None:
    first = LibraryImport(library).import_path(st_fixtures / "content" / "Eldoria.json").stored[0]
    again = LibraryImport(library).import_path(st_fixtures / "content" / "Eldoria.json").stored[0]
    assert again.id == first.id and again.replaced
    assert len(library.documents(LibraryKind.LOREBOOK)) == 1


def test_stored_items_write_back_what_was_read(library: LibraryService, st_fixtures: Path) -> None:
    import json

    path = st_fixtures / "presets" / "context" / "ChatML.json"
    item = LibraryImport(library).import_path(path).stored[0]
    stored = library.get(LibraryKind.CONTEXT_TEMPLATE, item.id)
    assert dict(stored.data) == json.loads(path.read_text(encoding="utf-8"))


def test_bad_file_is_a_format_error(library: LibraryService, tmp_path: Path) -> None:
    path = tmp_path / "mystery.json"
    path.write_text('{"hello": 1}', encoding="utf-8")
    with pytest.raises(FormatError) as info:
        LibraryImport(library).import_path(path)
    assert "mystery.json" in str(info.value)


def test_whole_user_data_folder(
    library: LibraryService, store: SqlStore, st_fixtures: Path, oracle_cases: Path, tmp_path: Path
) -> None:
    folder = user_data_folder(st_fixtures, oracle_cases, tmp_path / "default-user")
    steps: list[Progress] = []
    report = LibraryImport(library).import_path(folder, progress=steps.append)
    kinds = sorted({s.kind for s in report.stored})
    assert kinds == sorted(
        [
            "character",
            "lorebook",
            "chat_completion_preset",
            "text_completion_preset",
            "instruct_template",
            "context_template",
            "system_prompt",
            "quick_reply_set",
            "group",
            "persona",
        ]
    )
    assert {s.name for s in report.stored if s.kind == "character"} == {"Seraphina", "Kael"}
    assert steps[0].done == 0 and steps[-1].done == steps[-1].total > 10
    # the solo chat came with its checkpoint, linked to the character's card
    solo = next(c for c in report.chats if c.chat.title.startswith("Seraphina"))
    assert solo.checkpoints == ("Checkpoint #1 - 2024-09-28@14h10m05s",)
    seraphina = library.find(LibraryKind.CHARACTER, "Seraphina")
    assert seraphina is not None
    assert solo.chat.characters[0].document_id == seraphina.id
    # the group chat got the group's members and the metadata kept in the group file
    group_chat = next(c for c in report.chats if c.chat.group_id)
    assert [c.name for c in group_chat.chat.characters] == ["Seraphina", "Kael"]
    assert group_chat.chat.title == "Glade Council - 2024-09-28@15h00m00s"
    exported = InterchangeService(store).export_files(group_chat.chat.id)[0]
    assert exported.name == "2024-09-28@15h00m00s" and exported.document.header is None
    original = (folder / "group chats" / "2024-09-28@15h00m00s.jsonl").read_text(encoding="utf-8")
    assert exported.document.messages == read_chat(original).messages
    reasons = {Path(s.path).name: s.reason for s in report.skipped}
    assert "Broken.json" in reasons
    assert "2024-09-27@20h15m44s.jsonl" in reasons  # listed by the group, file absent
    assert "thumbnails" in reasons


def test_importing_a_data_folder_twice_makes_no_copies(
    library: LibraryService, store: SqlStore, st_fixtures: Path, oracle_cases: Path, tmp_path: Path
) -> None:
    folder = user_data_folder(st_fixtures, oracle_cases, tmp_path / "default-user")
    first = LibraryImport(library).import_path(folder)
    second = LibraryImport(library).import_path(folder)
    assert len(store.list_chats()) == len(first.chats) == 2
    assert all(c.already_imported for c in second.chats)
    assert {c.chat.id for c in second.chats} == {c.chat.id for c in first.chats}
    assert all(item.replaced for item in second.stored)


def test_zip_of_a_data_folder(
    library: LibraryService, store: SqlStore, st_fixtures: Path, oracle_cases: Path, tmp_path: Path
) -> None:
    folder = user_data_folder(st_fixtures, oracle_cases, tmp_path / "st" / "data" / "default-user")
    archive = shutil.make_archive(str(tmp_path / "export"), "zip", tmp_path / "st")
    report = LibraryImport(library).import_path(Path(archive))
    assert len(report.chats) == 2
    assert {s.name for s in report.stored if s.kind == "character"} == {"Seraphina", "Kael"}
    assert folder.is_dir()


def test_zip_entries_cannot_escape(library: LibraryService, tmp_path: Path) -> None:
    import zipfile

    path = tmp_path / "evil.zip"
    with zipfile.ZipFile(path, "w") as bundle:
        bundle.writestr("../../outside.json", "{}")
    with pytest.raises(FormatError, match="outside"):
        LibraryImport(library).import_path(path)
    assert not (tmp_path.parent / "outside.json").exists()


def test_group_branch_files_merge_using_the_group_file_metadata(
    library: LibraryService, store: SqlStore, st_fixtures: Path, tmp_path: Path
) -> None:
    import json

    folder = tmp_path / "user"
    shutil.copytree(st_fixtures / "handmade" / "user-data", folder)
    group_path = folder / "groups" / "1727532000123.json"
    group = json.loads(group_path.read_text(encoding="utf-8"))
    main_id, branch_id = "2024-09-28@15h00m00s", "Branch #2 - 2024-09-28@15h05m00s"
    group["chats"] = [main_id, branch_id]
    group["past_metadata"] = {branch_id: {"main_chat": main_id, "variables": {"x": 1}}}
    group_path.write_text(json.dumps(group, indent=4), encoding="utf-8")
    main_lines = (folder / "group chats" / f"{main_id}.jsonl").read_text(encoding="utf-8")
    lines = main_lines.split("\n")[:3]
    lines.append(json.dumps({"name": "Seraphina", "is_user": False, "mes": "Another turn."}))
    (folder / "group chats" / f"{branch_id}.jsonl").write_text("\n".join(lines), encoding="utf-8")
    report = LibraryImport(library).import_path(folder)
    (chat,) = [c for c in report.chats if c.chat.group_id]
    assert chat.branches == (branch_id,)
    assert chat.nodes == 4 + 1
    branch = next(s for s in store.branches(chat.chat.id) if s.branch.name == branch_id)
    assert store.state_at(chat.chat.id, branch.branch.head_id).variables == {"x": 1}
    assert not [s for s in report.skipped if "group chats" in s.path]


def test_a_card_without_picture_keeps_the_stored_picture(
    library: LibraryService, st_fixtures: Path, tmp_path: Path
) -> None:
    import json

    png = (
        LibraryImport(library)
        .import_path(st_fixtures / "content" / "default_Seraphina.png")
        .stored[0]
    )
    card = library.character(png.id).character.to_json()
    path = tmp_path / "Seraphina.json"
    path.write_text(json.dumps({"spec": "chara_card_v2", "spec_version": "2.0", "data": card}))
    again = LibraryImport(library).import_path(path).stored[0]
    assert again.id == png.id and again.replaced
    avatar = library.character(png.id).avatar
    assert avatar is not None and avatar.startswith(b"\x89PNG")


def test_a_cards_own_lorebook_is_imported_and_linked(library: LibraryService) -> None:
    import json

    from taverna.services.library.editing import import_card_lorebook

    lib = library
    card = {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {
            "name": "Keeper",
            "extensions": {},
            "character_book": {
                "name": "Lamp Lore",
                "extensions": {},
                "entries": [
                    {
                        "keys": ["lamp"],
                        "content": "The lamp is cold.",
                        "extensions": {},
                        "enabled": True,
                        "insertion_order": 100,
                        "use_regex": False,
                    }
                ],
            },
        },
    }
    item = lib.import_bytes(json.dumps(card).encode(), "Keeper.json")
    book = import_card_lorebook(lib, item.id)
    assert book.name == "Lamp Lore"
    stored = lib.get(LibraryKind.LOREBOOK, book.id)
    assert [e["content"] for e in stored.data["entries"].values()] == ["The lamp is cold."]
    assert lib.character(item.id).character.linked_world == "Lamp Lore"
    # A second import replaces the book; nothing is copied.
    import_card_lorebook(lib, item.id)
    assert len(lib.documents(LibraryKind.LOREBOOK)) == 1
