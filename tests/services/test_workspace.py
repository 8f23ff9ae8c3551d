"""The workspace the server and `taverna chat` share: services over one data folder, and
chat backups written as chats change (throttled, flushed on close)."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import taverna.cli.chat  # registers the command
from taverna.cli.main import app
from taverna.services.editing import rename_chat, start_chat
from taverna.services.library import LibraryKind, LibraryService
from taverna.services.workspace import open_workspace, seed_samples
from tests.stubs import Reply, StubServer, start_stub


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with start_stub() as server:
        yield server


def test_a_burst_of_writes_is_backed_up_once_now_and_once_on_close(tmp_path: Path) -> None:
    ws = open_workspace(tmp_path / "data", background_backups=False)
    now = [0.0]
    ws.backups.clock = lambda: now[0]
    try:
        assert seed_samples(ws.library()) == ["Ione Calder", "Brasswater"]
        card = LibraryService(ws.store).find(LibraryKind.CHARACTER, "Ione Calder")
        assert card is not None
        chat = start_chat(ws.chats, card.id, title="Harbour", owner="")
        ws.chat_written(chat.id)
        rename_chat(ws.chats, chat.id, "Harbour at dusk", revision=chat.revision)
        ws.chat_written(chat.id)
        assert [b.title for b in ws.backups.backups(chat.id)] == ["harbour"]
    finally:
        ws.close()
    titles = sorted(b.title for b in ws.backups.backups(chat.id))
    assert titles == ["harbour", "harbour_at_dusk"]


def test_a_deleted_chat_is_not_an_error(tmp_path: Path) -> None:
    ws = open_workspace(tmp_path / "data", background_backups=False)
    try:
        seed_samples(ws.library())
        card = LibraryService(ws.store).find(LibraryKind.CHARACTER, "Ione Calder")
        assert card is not None
        chat = start_chat(ws.chats, card.id, title="Gone", owner="")
        ws.store.delete_chat(chat.id, revision=chat.revision)
        ws.chat_written(chat.id)
        assert ws.backups.backups(chat.id) == []
    finally:
        ws.close()


def test_a_delete_cut_short_is_finished_when_the_workspace_opens(tmp_path: Path) -> None:
    ws = open_workspace(tmp_path / "data", background_backups=False)
    chat = ws.chats.create_chat("Long", greetings=[f"greeting {i}" for i in range(40)]).chat
    ws.store.purge_batch = 5  # type: ignore[attr-defined]
    # The process ends right after the delete's first batch: nothing more is removed.
    ws.store.purge_in_background = lambda: None  # type: ignore[method-assign]
    ws.store.delete_chat(chat.id, revision=chat.revision)
    assert ws.store.deleted_chats() == [chat.id]  # type: ignore[attr-defined]
    ws.close()
    ws = open_workspace(tmp_path / "data", background_backups=False)
    try:
        deadline = time.monotonic() + 60
        while ws.store.deleted_chats():  # type: ignore[attr-defined]
            assert time.monotonic() < deadline, "the removal did not resume"
            time.sleep(0.05)
        assert ws.store.list_chats() == []
    finally:
        ws.close()


def test_taverna_chat_say_backs_the_chat_up(tmp_path: Path, stub: StubServer) -> None:
    data = tmp_path / "data"
    ws = open_workspace(data, background_backups=False)
    seed_samples(ws.library())
    ws.connections.add("stub", "openai", url=stub.base_url("openai"), model="stub-model")
    ws.close()
    stub.script(Reply(tokens=["Aboard."]))
    result = CliRunner().invoke(app, ["chat", "Ione Calder", "--say", "Home", "--data", str(data)])
    assert result.exit_code == 0, result.output
    [backup] = (data / "backups").glob("*.jsonl")
    text = backup.read_text(encoding="utf-8")
    assert "Home" in text and "Aboard." in text
    assert taverna.cli.chat.HELP


def test_a_new_data_folder_is_the_owners_alone(tmp_path: Path) -> None:
    old_umask = os.umask(0o022)
    try:
        ws = open_workspace(tmp_path / "new" / "data", background_backups=False)
        ws.close()
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE((tmp_path / "new" / "data").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "new" / "data" / "taverna.db").stat().st_mode) == 0o600
