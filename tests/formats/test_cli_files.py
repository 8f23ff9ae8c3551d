"""`taverna inspect` and `taverna convert`, run as a person runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from taverna.cli.main import _register, app
from taverna.data import SAMPLE_CARD, SAMPLE_LOREBOOK
from taverna.formats.card_json import read_card_json
from taverna.formats.png_card import read_png_card

DATA = Path(__file__).resolve().parents[2] / "taverna" / "data"

_register()
runner = CliRunner()
# the console script's entry point, run in a fresh interpreter
TAVERNA = [sys.executable, "-c", "from taverna.cli.main import main; main()"]


def fixture_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name != "README.md")


def test_inspect_every_fixture(st_fixtures: Path) -> None:
    for path in fixture_files(st_fixtures):
        result = runner.invoke(app, ["inspect", str(path)])
        assert result.exit_code == 0, (path, result.output)
        assert "kind" in result.output
        as_json = runner.invoke(app, ["inspect", "--json", str(path)])
        assert as_json.exit_code == 0, (path, as_json.output)
        json.loads(as_json.output)


def test_inspect_summary_of_a_card(st_fixtures: Path) -> None:
    result = runner.invoke(
        app, ["inspect", str(st_fixtures / "handmade" / "cards" / "Kael.v3.json")]
    )
    out = result.output
    assert "card-json" in out and "Kael" in out
    assert "2 (1 alternate)" in out  # greetings
    assert "Kael's Lorebook: 2 entries" in out


def test_inspect_json_of_a_card_is_the_model(st_fixtures: Path) -> None:
    result = runner.invoke(
        app, ["inspect", "--json", str(st_fixtures / "content" / "default_Seraphina.png")]
    )
    doc = json.loads(result.output)
    assert doc["character"]["name"] == "Seraphina"
    assert doc["card"]["data"]["extensions"]["world"] == "Eldoria"
    assert doc["avatar_bytes"] > 100_000


@pytest.mark.parametrize("name", [SAMPLE_CARD, SAMPLE_LOREBOOK])
def test_inspect_the_samples(name: str) -> None:
    result = runner.invoke(app, ["inspect", str(DATA / name)])
    assert result.exit_code == 0, result.output
    assert ("Ione Calder" in result.output) or (
        "10 (10 enabled, 1 constant, 1 at depth)" in result.output
    )


def test_convert_png_to_json_and_back(st_fixtures: Path, tmp_path: Path) -> None:
    source = st_fixtures / "content" / "default_Seraphina.png"
    as_json = tmp_path / "Seraphina.json"
    assert runner.invoke(app, ["convert", str(source), str(as_json)]).exit_code == 0
    character = read_card_json(as_json.read_bytes())
    assert character.name == "Seraphina"
    back = tmp_path / "Seraphina.png"
    result = runner.invoke(app, ["convert", str(as_json), str(back)])
    assert result.exit_code == 0, result.output
    assert read_png_card(back.read_bytes()).character.to_json() == character.to_json()


def test_convert_v2_to_v3(st_fixtures: Path, tmp_path: Path) -> None:
    target = tmp_path / "v3.json"
    source = st_fixtures / "content" / "default_Seraphina.png"
    assert runner.invoke(app, ["convert", "--spec", "v3", str(source), str(target)]).exit_code == 0
    doc = json.loads(target.read_text())
    assert (doc["spec"], doc["spec_version"]) == ("chara_card_v3", "3.0")


def test_convert_embedded_book_to_world_file(st_fixtures: Path, tmp_path: Path) -> None:
    target = tmp_path / "Eldoria.json"
    source = st_fixtures / "content" / "default_Seraphina.png"
    assert runner.invoke(app, ["convert", "--book", str(source), str(target)]).exit_code == 0
    world = json.loads(target.read_text())
    assert len(world["entries"]) == 4
    assert world["originalData"]["name"] == "Eldoria"
    again = runner.invoke(app, ["inspect", str(target)])
    assert "world-info" in again.output


def test_convert_to_charx_and_back(st_fixtures: Path, tmp_path: Path) -> None:
    zipped = tmp_path / "Seraphina.charx"
    source = st_fixtures / "content" / "default_Seraphina.png"
    assert runner.invoke(app, ["convert", str(source), str(zipped)]).exit_code == 0
    result = runner.invoke(app, ["inspect", str(zipped)])
    assert "card-charx" in result.output and "Seraphina" in result.output
    assert "400x600" in result.output  # the picture travelled as the icon
    back = tmp_path / "again.png"
    assert runner.invoke(app, ["convert", str(zipped), str(back)]).exit_code == 0
    original = read_png_card(source.read_bytes())
    again = read_png_card(back.read_bytes())
    assert again.avatar == original.avatar
    assert again.character.name == original.character.name


def test_convert_refuses_to_overwrite(st_fixtures: Path, tmp_path: Path) -> None:
    target = tmp_path / "x.json"
    target.write_text("keep me")
    source = st_fixtures / "content" / "default_Seraphina.png"
    run = subprocess.run(
        [*TAVERNA, "convert", str(source), str(target)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2
    assert target.read_text() == "keep me"


@pytest.mark.parametrize(
    "content",
    [
        b"\x89PNG\r\n\x1a\nshort",
        b"{broken json",
        b'{"hello": "world"}',
        b"\xff\xfe\x00garbage",
        b"",
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    run = subprocess.run(
        [*TAVERNA, "inspect", str(path)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2
    assert run.stderr.startswith("error: ")
    assert len(run.stderr.strip().splitlines()) == 1
    assert "Traceback" not in run.stderr
    assert str(path) in run.stderr


def test_missing_file_exits_2(tmp_path: Path) -> None:
    run = subprocess.run(
        [*TAVERNA, "inspect", str(tmp_path / "nope.png")],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2
    assert "Traceback" not in run.stderr


def test_summary_shows_control_characters_escaped(tmp_path: Path) -> None:
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Eve\u001b[2J\nX"}}
    path = tmp_path / "eve.json"
    path.write_text(json.dumps(card))
    result = runner.invoke(app, ["inspect", str(path)])
    assert result.exit_code == 0
    assert "\x1b" not in result.output
    assert "Eve\\x1b[2J\\x0aX" in result.output
