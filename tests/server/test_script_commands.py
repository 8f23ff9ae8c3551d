"""GET /api/script-commands: every command /help lists, for the chat input's completion."""

from __future__ import annotations

from fastapi.testclient import TestClient

from taverna.engine.script.commands import COMMANDS


def test_the_route_lists_every_command_with_its_named_arguments(client: TestClient) -> None:
    answer = client.get("/api/script-commands")
    assert answer.status_code == 200
    listed = {entry["name"]: entry for entry in answer.json()}
    assert set(listed) == {command.name for command in COMMANDS}
    setvar = listed["setvar"]
    assert setvar["named"] == ["key", "index", "as"]
    assert "setchatvar" in setvar["aliases"]
    assert setvar["usage"].startswith("/setvar key=name")
    assert setvar["help"]
    assert listed["sendas"]["named"] == ["name"]
    assert listed["send"]["named"] == ["at", "name"]
    assert listed["help"]["aliases"] == ["?"]
    names = [entry["name"] for entry in answer.json()]
    assert names == sorted(names)
