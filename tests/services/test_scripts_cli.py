"""`taverna script run` and script lines in `taverna chat`, against a stub model."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import taverna.cli.chat  # registers the command
import taverna.cli.script  # noqa: F401 - registers the command
from taverna.cli.main import app
from taverna.services.house.data import open_data
from tests.stubs import Reply, StubServer

KEY = "sk-script-cli-key-12121212"

pytestmark = pytest.mark.stub_model(key=KEY)


def _chat_id(data: Path) -> str:
    with open_data(data) as opened:
        [listing] = opened.store.list_chats()
        return listing.chat.id


def _path(data: Path) -> list[tuple[str, str]]:
    with open_data(data) as opened:
        [listing] = opened.store.list_chats()
        nodes = opened.store.active_path(listing.chat.id).nodes
        return [(n.role.value, n.content) for n in nodes]


def test_a_chat_line_starting_with_a_slash_runs_as_a_script(data: Path, stub: StubServer) -> None:
    stub.script(Reply(tokens=["The ", "wind ", "answers."]))
    session = "/setvar key=mood calm | /sys The wind rises. | /trigger\n/getvar mood\n/quit\n"
    result = CliRunner().invoke(app, ["chat", "Ione Calder", "--data", str(data)], input=session)
    assert result.exit_code == 0, result.output
    assert "calm" in result.output
    assert _path(data)[-2:] == [("narrator", "The wind rises."), ("assistant", "The wind answers.")]


def test_script_run_in_a_chat_and_without(data: Path) -> None:
    runner = CliRunner()
    assert (
        runner.invoke(app, ["chat", "Ione Calder", "--data", str(data)], input="/quit\n").exit_code
        == 0
    )
    chat_id = _chat_id(data)
    result = runner.invoke(
        app,
        [
            "script",
            "run",
            "/setvar key=hp 10 | /decvar hp | /send ouch",
            "--chat",
            chat_id,
            "--data",
            str(data),
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == ""
    assert _path(data)[-1] == ("user", "ouch")
    again = runner.invoke(
        app, ["script", "run", "/getvar hp", "--chat", chat_id, "--data", str(data)]
    )
    assert again.stdout.strip() == "9"
    outside = runner.invoke(app, ["script", "run", "/add 2 3", "--data", str(data)])
    assert outside.stdout.strip() == "5"


def test_script_run_reports_the_position_of_an_error(data: Path) -> None:
    result = CliRunner().invoke(app, ["script", "run", "/pass a |\n/nosuch", "--data", str(data)])
    assert result.exit_code != 0
    assert "unknown command /nosuch" in str(result.exception)
    assert "2:1" in str(result.exception)


def test_genraw_from_the_shell_prints_the_model_text(data: Path, stub: StubServer) -> None:
    runner = CliRunner()
    assert (
        runner.invoke(app, ["chat", "Ione Calder", "--data", str(data)], input="/quit\n").exit_code
        == 0
    )
    chat_id = _chat_id(data)
    stub.script(Reply(tokens=["Aye."]))
    result = runner.invoke(
        app,
        [
            "script",
            "run",
            "/genraw Answer in one word. | /upper",
            "--chat",
            chat_id,
            "--data",
            str(data),
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "AYE."


def test_say_with_a_script_runs_it(data: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        app, ["chat", "Ione Calder", "--say", "/setvar key=n 4 | /mul n 10", "--data", str(data)]
    )
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "40"
