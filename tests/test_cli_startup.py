"""The command line imports what a command needs when it runs, nothing more.

A command that reads files must not load the server, the store, SQLAlchemy or the model
APIs' HTTP client: those cost most of a second at every start. Checked on the modules a
fresh interpreter has loaded after the command ran (no timing here; `bench/cli.py` times it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from taverna.cli.main import COMMANDS, _register, _wanted, app

SAMPLE_PNG = Path(__file__).resolve().parents[1] / "taverna" / "data" / "Ione Calder.png"
CARD = {
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {"name": "Mira", "description": "{{char}} keeps a lighthouse.", "first_mes": "Hi."},
}

# Packages and modules no file-reading command may import.
HEAVY = (
    "sqlalchemy",
    "alembic",
    "psycopg",
    "starlette",
    "fastapi",
    "uvicorn",
    "httpx",
    "anyio",
    "jinja2",
    "tiktoken",
    "tokenizers",
    "taverna.store",
    "taverna.server",
    "taverna.services",
    "taverna.providers",
    "taverna.engine",
)


def loaded_after(*args: str, entry: str = "taverna.cli.main") -> set[str]:
    """The modules a fresh interpreter holds after running `taverna ARGS` through the
    `main` of module `entry`."""
    script = (
        "import json, sys\n"
        f"sys.argv = ['taverna', *{list(args)!r}]\n"
        f"from {entry} import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exit:\n"
        "    assert not exit.code, exit.code\n"
        "print('\\n' + json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    return set(json.loads(result.stdout.rsplit("\n", 2)[-2]))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_version_imports_no_command_module() -> None:
    modules = loaded_after("version")
    assert not {m for m in modules if m.startswith("taverna.cli.") and m != "taverna.cli.main"}
    assert heavy(modules) == []


def test_the_console_scripts_version_loads_no_command_line_framework() -> None:
    for flag in ("version", "--version"):
        modules = loaded_after(flag, entry="taverna.cli.entry")
        assert not {m for m in modules if m.startswith(("typer", "click", "pydantic"))}
        assert {m for m in modules if m.startswith("taverna")} <= {
            "taverna",
            "taverna.cli",
            "taverna.cli.entry",
        }
        assert heavy(modules) == []


def test_the_console_script_runs_every_other_command_through_the_full_parser() -> None:
    result = subprocess.run(
        [sys.executable, "-c", "from taverna.cli.entry import main; main()", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0 and "inspect" in result.stdout


def json_card(folder: Path) -> Path:
    path = folder / "Mira.json"
    path.write_text(json.dumps(CARD), encoding="utf-8")
    return path


@pytest.mark.parametrize("as_json", [False, True])
@pytest.mark.parametrize("picture", [False, True])
def test_reading_a_card_loads_no_server_store_or_provider(
    tmp_path: Path, as_json: bool, picture: bool
) -> None:
    card = SAMPLE_PNG if picture else json_card(tmp_path)
    modules = loaded_after("inspect", *(["--json"] if as_json else []), str(card))
    assert "taverna.cli.files" in modules
    assert heavy(modules) == []
    # and only the models of the kind read: no preset or quick-reply models for a card
    assert "taverna.model.presets" not in modules
    assert "taverna.model.quick_reply" not in modules


def test_convert_loads_no_server_store_or_provider(tmp_path: Path) -> None:
    modules = loaded_after("convert", str(json_card(tmp_path)), str(tmp_path / "card.png"))
    assert (tmp_path / "card.png").is_file()
    assert heavy(modules) == []


def test_every_command_is_routed_to_its_module() -> None:
    _register()
    names = {c.name or c.callback.__name__ for c in app.registered_commands if c.callback}
    names |= {g.name for g in app.registered_groups if g.name}
    assert names == {*COMMANDS, "version"}


@pytest.mark.parametrize(
    ("argv", "modules"),
    [
        (["version"], ()),
        (["inspect", "x.json"], ("taverna.cli.files",)),
        (["chats", "list"], ("taverna.cli.chats",)),
        (["--help"], None),
        (["nonsense"], None),
        ([], None),
    ],
)
def test_a_command_line_imports_its_command_module(
    argv: list[str], modules: tuple[str, ...] | None
) -> None:
    wanted = _wanted(argv)
    if modules is None:
        assert set(wanted) == set(COMMANDS.values())
    else:
        assert wanted == modules


@pytest.mark.parametrize("as_json", [False, True])
def test_the_console_scripts_inspect_loads_no_command_line_framework(
    tmp_path: Path, as_json: bool
) -> None:
    card = json_card(tmp_path)
    modules = loaded_after(
        "inspect", *(["--json"] if as_json else []), str(card), entry="taverna.cli.entry"
    )
    assert "taverna.cli.inspecting" in modules
    assert not {m for m in modules if m.startswith(("typer", "click", "rich"))}
    assert heavy(modules) == []


def run_entry(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from taverna.cli.entry import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("flags", [(), ("--json",)])
def test_inspect_says_the_same_through_the_console_script_and_the_full_parser(
    tmp_path: Path, flags: tuple[str, ...]
) -> None:
    card = tmp_path / "loose.json"
    card.write_text(
        json.dumps({**CARD, "data": {**CARD["data"], "alternate_greetings": None}}),
        encoding="utf-8",
    )
    quick = run_entry("inspect", *flags, str(card))
    full = subprocess.run(
        [
            sys.executable,
            "-c",
            "from taverna.cli.main import main; main()",
            "inspect",
            *flags,
            str(card),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert quick.returncode == full.returncode == 0
    assert quick.stdout == full.stdout and "Mira" in quick.stdout
    assert quick.stderr == full.stderr and "alternate_greetings" in quick.stderr


def test_inspect_of_a_bad_file_is_one_line_and_exit_code_2(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"spec": "chara_card_v2", "data": {', encoding="utf-8")
    for args in (("inspect", str(broken)), ("inspect", str(tmp_path / "missing.json"))):
        result = run_entry(*args)
        assert result.returncode == 2
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
        assert "Traceback" not in result.stderr


def test_inspect_with_other_options_goes_through_the_full_parser() -> None:
    result = run_entry("inspect", "--help")
    assert result.returncode == 0 and "--json" in result.stdout


@pytest.mark.parametrize("as_json", [False, True])
@pytest.mark.parametrize("picture", [False, True])
def test_the_console_scripts_inspect_of_a_small_card_loads_no_pydantic_nor_pillow(
    tmp_path: Path, as_json: bool, picture: bool
) -> None:
    # the card models are not needed to show a card (formats/quick_read.py)
    card = SAMPLE_PNG if picture else json_card(tmp_path)
    flags = ["--json"] if as_json else []
    modules = loaded_after("inspect", *flags, str(card), entry="taverna.cli.entry")
    assert "taverna.formats.quick_read" in modules
    assert not {m for m in modules if m.split(".")[0] in ("pydantic", "pydantic_core")}
    assert "taverna.model.character" not in modules
    # a plain PNG's chunks and header are read without Pillow (formats/png_chunks.py)
    assert not {m for m in modules if m.split(".")[0] == "PIL"}


CORPUS = Path(__file__).resolve().parent / "corpus"


@pytest.mark.parametrize(
    "name", ["lorebooks/clean.json", "chats/clean.jsonl", "support/settings.json"]
)
def test_inspect_of_a_world_file_a_chat_or_settings_loads_no_pydantic(name: str) -> None:
    # their readers are plain code; only the kinds validated with a model need pydantic
    modules = loaded_after("inspect", str(CORPUS / name), entry="taverna.cli.entry")
    assert "taverna.cli.inspecting" in modules
    assert not {m for m in modules if m.split(".")[0] in ("pydantic", "pydantic_core")}
