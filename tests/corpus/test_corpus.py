"""Every file of the corpus (tests/corpus, see its README) opens as SillyTavern opens it.

For each file: `taverna inspect` reads it and names every value read loosely; an import
stores it with those same warnings; what was stored reads again with none; a conversion
written back reads again unchanged; and the files that feed a prompt (cards, lorebooks,
chats, presets, templates) build one.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from taverna.cli.main import _register, app
from taverna.engine.assemble import assemble
from taverna.formats.card_json import card_from_json
from taverna.formats.detect import FileKind, read_any, write_document
from taverna.formats.st_chat import read_chat
from taverna.formats.st_settings import (
    chosen_chat_completion,
    chosen_context_template,
    chosen_instruct_template,
    read_settings,
)
from taverna.formats.world_info import world_info_from_json
from taverna.services.interchange.library_import import LibraryImport
from taverna.services.library.service import LibraryService
from taverna.services.turns.inputs import assembly_context, character_info, chat_messages
from taverna.store.sql import SqlStore
from taverna.store.testing import temporary_store

CORPUS = Path(__file__).parent
EXPECTED: dict[str, dict[str, Any]] = json.loads((CORPUS / "expected.json").read_text())
FILES = sorted(EXPECTED)
CARD = CORPUS / "cards" / "clean-v2.json"
CHAT = CORPUS / "chats" / "clean.jsonl"
SETTINGS = CORPUS / "support" / "settings.json"


def test_the_manifest_lists_every_file_of_the_corpus() -> None:
    found = {
        p.relative_to(CORPUS).as_posix()
        for p in CORPUS.rglob("*")
        if p.is_file() and p.suffix in (".json", ".jsonl", ".png", ".charx")
    }
    found -= {"expected.json", "support/settings.json"}
    assert found == set(FILES)
    assert len(FILES) >= 30


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    _register()
    return CliRunner()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqlStore]:
    with temporary_store("sqlite", tmp_path) as opened:
        yield opened


def _fields(warnings: Any) -> set[str]:
    return {w.field for w in warnings}


@pytest.mark.parametrize("name", FILES)
def test_inspect_reads_it_and_names_each_value_read_loosely(name: str, runner: CliRunner) -> None:
    expected = EXPECTED[name]
    result = runner.invoke(app, ["inspect", str(CORPUS / name)])
    assert result.exit_code == 0, result.output
    assert f"kind  {expected['kind']}" in result.stdout.replace("  kind", "kind")
    lines = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert len(lines) == min(len(read_any((CORPUS / name).read_bytes(), name).warnings), 20)
    for field in expected["warnings"][:5]:
        assert any(f"field {field!r}" in line for line in lines), (field, lines)
    as_json = runner.invoke(app, ["inspect", "--json", str(CORPUS / name)])
    assert as_json.exit_code == 0 and json.loads(as_json.stdout)


@pytest.mark.parametrize("name", FILES)
def test_import_stores_it_with_the_same_warnings_and_the_stored_copy_reads_clean(
    name: str, store: SqlStore
) -> None:
    library = LibraryService(store)
    report = LibraryImport(library).import_paths([CORPUS / name], strict=True)
    assert report.skipped == []
    assert report.stored or report.chats
    assert _fields(report.warnings) == set(EXPECTED[name]["warnings"])
    assert all(w.file and w.file.endswith(Path(name).name) for w in report.warnings)
    for item in report.stored:
        doc = store.get_document(item.id)
        if item.kind == "character":
            again: list[Any] = []
            card_from_json(dict(doc.data), file=doc.name, warnings=again)
            assert again == []
        elif item.kind == "lorebook":
            again = []
            world_info_from_json(dict(doc.data), name=doc.name, warnings=again)
            assert again == []
        else:
            assert read_any(json.dumps(dict(doc.data)).encode(), f"{doc.name}.json").warnings == ()


# SillyTavern turns these into V2 cards when it imports them (formats-character-card.md §5.2).
CONVERTED_ON_IMPORT = {"cards/pygmalion.json", "cards/v1-old-fields.json", "cards/v1-tavernai.json"}


@pytest.mark.parametrize("name", FILES)
def test_written_back_it_reads_again_unchanged_and_clean(name: str) -> None:
    path = CORPUS / name
    first = read_any(path.read_bytes(), path.name)
    written = write_document(first)
    second = read_any(written, path.name)
    assert second.kind in (first.kind, FileKind.WORLD_INFO)
    assert second.warnings == ()
    if name in CONVERTED_ON_IMPORT:  # now a card of another version: the same values
        assert json.loads(write_document(second)) == json.loads(written)
    else:
        assert write_document(second) == written
    if not first.warnings and name not in CONVERTED_ON_IMPORT:
        # a file read with no warning comes back as it was (SillyTavern ends none with a newline)
        assert written.rstrip(b"\n") == path.read_bytes().rstrip(b"\n") or first.kind in (
            FileKind.CARD_PNG,
            FileKind.CARD_CHARX,
            FileKind.QUICK_REPLY_SET,
            FileKind.LOREBOOK_V3,
        )


CARDS = [n for n in FILES if EXPECTED[n]["kind"].startswith("card-")]


@pytest.mark.parametrize("name", CARDS)
@pytest.mark.parametrize("suffix", [".png", ".json", ".charx"])
def test_a_card_converts_to_each_card_format_and_back(
    name: str, suffix: str, runner: CliRunner, tmp_path: Path
) -> None:
    target = tmp_path / f"out{suffix}"
    result = runner.invoke(app, ["convert", str(CORPUS / name), str(target)])
    assert result.exit_code == 0, result.output
    if EXPECTED[name]["warnings"]:
        assert "warning: " in result.stderr
    back = read_any(target.read_bytes(), target.name)
    assert back.warnings == ()
    original = read_any((CORPUS / name).read_bytes(), name).value.character
    assert back.value.character.name == original.name
    assert back.value.character.depth_prompt == original.depth_prompt


def _prompt(runner: CliRunner, *args: str, settings: Path = SETTINGS) -> list[dict[str, Any]]:
    command = ["prompt", "--settings", str(settings), *args, "--json"]
    result = runner.invoke(app, command, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    messages: list[dict[str, Any]] = json.loads(result.stdout)["messages"]
    return messages


@pytest.mark.parametrize("name", CARDS)
def test_a_card_builds_a_prompt(name: str, runner: CliRunner) -> None:
    character = read_any((CORPUS / name).read_bytes(), name).value.character
    messages = _prompt(runner, "--card", str(CORPUS / name), "--chat", str(CHAT))
    text = "\n".join(m["content"] for m in messages)
    assert character.description.replace("{{char}}", character.name) in text
    note = character.depth_prompt
    if note.prompt:
        # the character's note goes in at its depth, read as SillyTavern reads it
        # (`""` is 0: after the last message; `"4"` and null are 4)
        at = next(i for i, m in enumerate(messages) if note.prompt in m["content"])
        last = next(i for i, m in enumerate(messages) if "worry me" in m["content"])
        assert (at > last) == (int(note.depth) == 0)


@pytest.mark.parametrize("name", [n for n in FILES if n.startswith("lorebooks/")])
def test_a_lorebook_builds_a_prompt_with_its_constant_and_matched_entries(
    name: str, runner: CliRunner, tmp_path: Path
) -> None:
    document = read_any((CORPUS / name).read_bytes(), name)
    book = document.value
    world = tmp_path / f"{book.name}.json"  # as a world file, selected for every chat
    world.write_bytes(write_document(document))
    settings = json.loads(SETTINGS.read_text())
    settings["world_info_settings"]["world_info"] = {"globalSelect": [book.name]}
    chosen = tmp_path / "settings.json"
    chosen.write_text(json.dumps(settings))
    args = ["--card", str(CARD), "--chat", str(CHAT), "--world", str(world)]
    messages = _prompt(runner, *args, settings=chosen)
    text = "\n".join(m["content"] for m in messages)
    chat_text = " ".join(m.text for m in read_chat(CHAT.read_bytes()).messages).lower()
    for entry in book.entries:
        placed = entry.position is not None and not entry.disable and entry.content
        matched = entry.constant or any(k.lower() in chat_text for k in entry.key)
        certain = not entry.use_probability or entry.probability >= 100  # no dice roll
        if placed and matched and certain and int(entry.position) in (0, 1):
            assert entry.content in text, entry


@pytest.mark.parametrize("name", [n for n in FILES if n.startswith("chats/")])
def test_a_chat_builds_a_prompt_with_its_messages(name: str, runner: CliRunner) -> None:
    chat = read_any((CORPUS / name).read_bytes(), name).value
    messages = _prompt(runner, "--card", str(CARD), "--chat", str(CORPUS / name))
    contents = [m["content"] for m in messages]
    for message in chat.messages[1:]:
        assert any(message.text in c for c in contents), message.text


PROMPT_PRESETS = [
    n
    for n in FILES
    if EXPECTED[n]["kind"] in ("chat-completion-preset", "instruct-template", "context-template")
]


@pytest.mark.parametrize("name", PROMPT_PRESETS)
def test_an_imported_preset_or_template_builds_a_prompt(name: str, store: SqlStore) -> None:
    """Through the store and the readers a turn uses (services/turns/context.py)."""
    library = LibraryService(store)
    (item,) = LibraryImport(library).import_paths([CORPUS / name], strict=True).stored
    data = dict(store.get_document(item.id).data)
    settings = read_settings(SETTINGS.read_bytes(), file=str(SETTINGS))
    kind = EXPECTED[name]["kind"]
    api = "openai"
    if kind == "chat-completion-preset":
        chat_completion = chosen_chat_completion(data, file=item.name)
        settings = dataclasses.replace(settings, chat_completion=chat_completion)
    else:
        api = "textgen"
        text = settings.text_completion
        if kind == "instruct-template":
            instruct = chosen_instruct_template(data)
            text = dataclasses.replace(text, instruct=instruct, instruct_enabled=True)
        else:
            text = dataclasses.replace(text, context=chosen_context_template(data))
        settings = dataclasses.replace(settings, text_completion=text)
    character = card_from_json(json.loads(CARD.read_text()))
    chat = read_chat(CHAT.read_bytes())
    context = assembly_context(
        settings,
        [character_info(character, avatar="clean-v2.png")],
        dict(chat.metadata.fields),
        chat_messages(chat.messages),
        {},
        api=api,
    )
    prompt = assemble(context)
    text_out = json.dumps(prompt.to_json() if hasattr(prompt, "to_json") else str(prompt))
    assert "lighthouse at Gull Point" in text_out
    if kind == "chat-completion-preset":
        assert "fictional chat between Marla Venn and You" in text_out
    if kind == "instruct-template":
        assert "### Instruction:" in text_out
