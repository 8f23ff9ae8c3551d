"""Files come back as they were: read and written as their own kind, byte for byte; through
another kind, the same JSON in the same key order.

Over SillyTavern's own files (../shared/fixtures, skipped when missing) and over the files
in tests/sillytavern_files: a card another tool wrote (`data` first, two-space indent,
CRLF, a final newline, a top-level `tags` of "" beside `data.tags`), a V1 card, a 1.9
context template, a reasoning template, settings.json of three eras, a persona backup
and a chat with CRLF, TavernAI's header and a greeting shown with its names filled in.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from taverna.cli.main import _register, app
from taverna.formats import json_text
from taverna.formats.card_json import card_to_json
from taverna.formats.detect import FileKind, read_any, write_document
from taverna.formats.png_card import read_png_card
from taverna.formats.st_settings import chosen_context_template, read_settings
from taverna.model.character import SPEC_V3

FILES = Path(__file__).resolve().parents[1] / "sillytavern_files"
OURS = sorted(p for p in FILES.iterdir() if p.is_file())

_register()
runner = CliRunner()


def as_written(path: Path, tmp_path: Path, suffix: str | None = None) -> bytes:
    """The bytes `taverna convert` writes for `path` as a file ending in `suffix`."""
    target = tmp_path / f"out{suffix or path.suffix}"
    result = runner.invoke(app, ["convert", "--force", str(path), str(target)])
    assert result.exit_code == 0, result.output
    return target.read_bytes()


@pytest.mark.parametrize("path", OURS, ids=lambda p: p.name)
def test_our_files_come_back_byte_for_byte(path: Path, tmp_path: Path) -> None:
    data = path.read_bytes()
    document = read_any(data, path.name)
    assert write_document(document) == data
    assert as_written(path, tmp_path) == data
    assert runner.invoke(app, ["inspect", str(path)]).exit_code == 0


def test_sillytaverns_files_come_back_byte_for_byte(st_fixtures: Path, tmp_path: Path) -> None:
    files = sorted(p for p in st_fixtures.rglob("*") if p.suffix in (".json", ".jsonl"))
    assert len(files) > 20
    for path in files:
        assert as_written(path, tmp_path) == path.read_bytes(), path


def test_sillytaverns_png_cards_keep_card_and_picture(st_fixtures: Path, tmp_path: Path) -> None:
    for path in sorted(st_fixtures.rglob("*.png")):
        before = read_png_card(path.read_bytes())
        after = read_png_card(as_written(path, tmp_path))
        assert json.dumps(card_to_json(after.character)) == json.dumps(
            card_to_json(before.character)
        ), path
        assert after.avatar == before.avatar, path


@pytest.mark.parametrize(
    ("name", "suffix"),
    [
        ("card-data-first.json", ".png"),
        ("card-data-first.json", ".charx"),
        ("card-v1.json", ".png"),
    ],
)
def test_a_json_card_through_png_and_charx_comes_back_the_same(
    name: str, suffix: str, tmp_path: Path
) -> None:
    source = FILES / name
    original = json.loads(source.read_bytes())
    through = tmp_path / f"through{suffix}"
    assert runner.invoke(app, ["convert", str(source), str(through)]).exit_code == 0
    back = as_written(through, tmp_path, ".json")
    # the same JSON, keys in the same order at every level, in SillyTavern's layout
    assert back == json_text.dumps(original, indent=4).encode()


def test_a_v1_card_stays_v1_and_converts_to_v3_on_request(tmp_path: Path) -> None:
    source = FILES / "card-v1.json"
    png = tmp_path / "v1.png"
    assert runner.invoke(app, ["convert", str(source), str(png)]).exit_code == 0
    assert read_png_card(png.read_bytes()).character.spec is None
    v3 = tmp_path / "v3.json"
    result = runner.invoke(app, ["convert", "--spec", "v3", str(source), str(v3)])
    assert result.exit_code == 0 and "upgraded to V3" in result.output
    doc = json.loads(v3.read_bytes())
    assert (doc["spec"], doc["spec_version"]) == (SPEC_V3, "3.0")
    assert doc["x_old_tool"] == {"version": 3} and doc["data"]["first_mes"] == "Rope?"
    charx = tmp_path / "v1.charx"
    result = runner.invoke(app, ["convert", str(source), str(charx)])
    assert result.exit_code == 0 and "CHARX holds V3 cards" in result.output


def test_an_untouched_card_keeps_what_its_two_layers_disagree_on() -> None:
    document = read_any((FILES / "card-data-first.json").read_bytes(), "card.json")
    doc = card_to_json(document.value.character)
    assert doc["tags"] == "" and doc["data"]["tags"] == ["coast", "lighthouse"]
    assert list(doc) == ["data", "spec", "name", "tags", "spec_version", "create_date"]


def test_a_19_context_template_reads_in_the_form_of_later_releases() -> None:
    data = (FILES / "context-1.9.json").read_bytes()
    document = read_any(data, "context-1.9.json")
    assert document.kind is FileKind.CONTEXT_TEMPLATE and document.value.legacy
    story = document.value.effective_story_string
    assert story.startswith("{{system}}\n{{wiBefore}}\n{{char}} is described: {{description}}")
    assert "{{wiAfter}}" in story and "Character}}" not in story
    assert chosen_context_template(json.loads(data)).story_string == story


def test_a_reasoning_template_is_a_kind_of_its_own() -> None:
    document = read_any((FILES / "reasoning-Angle Brackets.json").read_bytes(), "r.json")
    assert document.kind is FileKind.REASONING_TEMPLATE
    assert (document.value.prefix, document.value.separator) == ("<thinking>\n", "\n\n")


@pytest.mark.parametrize(
    ("name", "selection", "source", "model"),
    [
        ("settings.json", ("Harbour Town", "Old Roads"), "openai", "gpt-4o-mini"),
        ("settings-1.9.json", ("Harbour Town",), "claude", "claude-instant-v1"),
        ("settings-tavernai.json", (), "openai", "gpt-4-turbo"),
    ],
)
def test_settings_of_every_era_are_a_kind_of_their_own(
    name: str, selection: tuple[str, ...], source: str, model: str
) -> None:
    data = (FILES / name).read_bytes()
    assert read_any(data, name).kind is FileKind.SETTINGS
    settings = read_settings(data, file=name)
    assert settings.world_info.global_select == selection
    cc = settings.chat_completion
    assert (cc.source, cc.model) == (source, model)
    # a budget kept in tokens by old releases is reset to SillyTavern's 25 %
    assert settings.world_info.budget_percent <= 100


def test_19_settings_bring_their_prompts_and_persona() -> None:
    settings = read_settings((FILES / "settings-1.9.json").read_bytes())
    main = next(p for p in settings.chat_completion.prompts if p.identifier == "main")
    assert main.content == "Write {{char}}'s next reply."
    assert (
        settings.persona.name == "Wren" and settings.persona.description == "{{user}} mends nets."
    )


def test_settings_global_variables_are_read() -> None:
    settings = read_settings((FILES / "settings.json").read_bytes())
    assert settings.global_variables == {"tide": "high", "visits": 3}


def test_inspect_summarises_a_settings_file() -> None:
    out = runner.invoke(app, ["inspect", str(FILES / "settings.json")]).output
    for text in (
        "settings",
        "gpt-4o-mini",
        "Harbour ChatML",
        "Angle Brackets",
        "Wren (wren.png), The Ferryman (ferryman.png)",
        "Harbour Town, Old Roads",
        "tide, visits",
    ):
        assert text in out, text
    assert "personas" in out and "kind  personas" not in out
