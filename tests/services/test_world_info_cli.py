"""`taverna world-info show|set`: the same settings as the page's panel, from the command line."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from taverna.cli.main import app
from tests.support.cli import run


def test_the_settings_are_shown_and_changed(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    shown = json.loads(run("world-info", "show", "--data", data))
    assert shown["world_info_depth"] == 2
    changed = json.loads(
        run(
            "world-info",
            "set",
            "world_info_depth=6",
            "world_info_character_strategy=2",
            "world_info_overflow_alert=true",
            "--data",
            data,
        )
    )
    assert changed["world_info_depth"] == 6
    assert changed["world_info_character_strategy"] == 2
    assert changed["world_info_overflow_alert"] is True
    assert json.loads(run("world-info", "show", "--data", data)) == changed

    refused = CliRunner().invoke(
        app, ["world-info", "set", "world_info_depth=5000", "--data", data]
    )
    assert refused.exit_code != 0
    assert "world_info_depth" in str(refused.output) + str(refused.exception)
    assert json.loads(run("world-info", "show", "--data", data)) == changed
