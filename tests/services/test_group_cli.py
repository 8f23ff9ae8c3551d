"""`taverna chat --group`: a round in the terminal, /speak and /mute, against a stub model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import taverna.cli.chat  # noqa: F401  (registers the command)
from taverna.cli.main import app
from taverna.services.connections.service import ConnectionService
from taverna.services.house.data import open_data
from taverna.services.interchange.library_import import LibraryImport
from taverna.services.library.service import LibraryService
from tests.stubs import Reply, StubServer
from tests.support.folders import connect_stub

KEY = "sk-group-terminal-key-1234"
GROUP = {
    "id": "1727532000999",
    "name": "Night Shift",
    "members": ["Mira.png", "Дмитрий.png"],
    "activation_strategy": 1,
    "generation_mode": 0,
    "disabled_members": [],
    "chat_id": "",
    "chats": [],
}

pytestmark = pytest.mark.stub_model(key=KEY)


@pytest.fixture
def data(tmp_path: Path, stub: StubServer) -> Path:
    folder = tmp_path / "data"
    files = []
    for name in ("Mira", "Дмитрий"):
        card = tmp_path / f"{name}.json"
        card.write_text(
            json.dumps(
                {
                    "spec": "chara_card_v2",
                    "spec_version": "2.0",
                    "data": {"name": name, "description": f"{name} works nights."},
                }
            )
        )
        files.append(card)
    group = tmp_path / "Night Shift.json"
    group.write_text(json.dumps(GROUP, ensure_ascii=False))
    with open_data(folder) as opened:
        library = LibraryService(opened.store)
        for path in [*files, group]:
            LibraryImport(library).import_file(path)
        connect_stub(ConnectionService(opened.store, opened.path), stub)
    return folder


def path_of(data: Path) -> list[tuple[str, str, str]]:
    with open_data(data) as opened:
        [listing] = opened.store.list_chats()
        nodes = opened.store.active_path(listing.chat.id).nodes
        return [(n.role.value, n.speaker, n.content) for n in nodes]


def test_say_runs_a_round_of_every_speaker(data: Path, stub: StubServer) -> None:
    stub.script(Reply(tokens=["Evening."]), Reply(tokens=["Добрый вечер."]))
    result = CliRunner().invoke(
        app, ["chat", "--group", "Night Shift", "--say", "Hi both", "--data", str(data)]
    )
    assert result.exit_code == 0, result.output
    assert "Mira: Evening." in result.output and "Дмитрий: Добрый вечер." in result.output
    assert path_of(data)[-3:] == [
        ("user", "User", "Hi both"),
        ("assistant", "Mira", "Evening."),
        ("assistant", "Дмитрий", "Добрый вечер."),
    ]


def test_speak_and_mute_in_a_session(data: Path, stub: StubServer) -> None:
    stub.script(Reply(tokens=["Me first."]), Reply(tokens=["Only Mira now."]))
    session = "/speak Дмитрий\n/mute Дмитрий\n/members\nAnyone?\n/quit\n"
    result = CliRunner().invoke(
        app, ["chat", "--group", "Night Shift", "--data", str(data)], input=session
    )
    assert result.exit_code == 0, result.output
    assert "Дмитрий  (muted)" in result.output
    assert path_of(data)[-3:] == [
        ("assistant", "Дмитрий", "Me first."),
        ("user", "User", "Anyone?"),
        ("assistant", "Mira", "Only Mira now."),
    ]


def test_an_unknown_group_is_named(data: Path) -> None:
    result = CliRunner().invoke(app, ["chat", "--group", "Nope", "--say", "x", "--data", str(data)])
    assert result.exit_code != 0
    assert "Nope" in str(result.exception) and "Night Shift" in str(result.exception)
