"""The workspace the server and `taverna chat` share: services over one data folder, and
chat backups written as chats change (throttled, flushed on close)."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import taverna.cli.chat  # registers the command
import taverna.cli.chat_commands
from taverna.cli.main import app
from taverna.services.chats.editing import rename_chat, start_chat
from taverna.services.house.workspace import open_workspace, seed_samples
from taverna.services.library.service import LibraryKind, LibraryService
from tests.stubs import Reply, StubServer, start_stub


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
    assert taverna.cli.chat_commands.HELP


def test_a_new_data_folder_is_the_owners_alone(tmp_path: Path) -> None:
    old_umask = os.umask(0o022)
    try:
        ws = open_workspace(tmp_path / "new" / "data", background_backups=False)
        ws.close()
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE((tmp_path / "new" / "data").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "new" / "data" / "taverna.db").stat().st_mode) == 0o600


def test_a_new_library_gets_presets_and_templates_that_export_as_sillytavern_files(
    tmp_path: Path,
) -> None:
    from taverna.formats.detect import FileKind, detect
    from taverna.formats.json_text import dumps
    from taverna.services.house.workspace import seed_presets
    from taverna.services.library.active_settings import active_choices

    ws = open_workspace(tmp_path / "data", background_backups=False)
    try:
        lib = ws.library()
        names = seed_presets(lib)
        assert names == [
            "Taverna Default",
            "ChatML",
            "Llama 3 Instruct",
            "Mistral",
            "Taverna Story",
            "Taverna Roleplay",
        ]
        expected = {
            LibraryKind.CHAT_COMPLETION_PRESET: FileKind.CHAT_COMPLETION_PRESET,
            LibraryKind.INSTRUCT_TEMPLATE: FileKind.INSTRUCT_TEMPLATE,
            LibraryKind.CONTEXT_TEMPLATE: FileKind.CONTEXT_TEMPLATE,
            LibraryKind.SYSTEM_PROMPT: FileKind.SYSTEM_PROMPT,
        }
        for kind, file_kind in expected.items():
            docs = lib.documents(kind)
            assert docs, kind
            for doc in docs:
                # What the page's export writes is read back as the same kind, unchanged.
                exported = dumps(dict(doc.data), indent=4).encode("utf-8")
                assert detect(exported, f"{doc.name}.json") is file_kind
                other = LibraryService(ws.store, owner="round-trip")
                again = other.import_bytes(exported, f"{doc.name}.json")
                assert again.name == doc.name
                assert other.get(kind, again.id).data == doc.data
        chat_preset = lib.documents(LibraryKind.CHAT_COMPLETION_PRESET)[0]
        assert active_choices(ws.store)["chat_completion_preset"] == chat_preset.id
        # The samples still come with a new folder after the presets.
        assert seed_samples(lib) == ["Ione Calder", "Brasswater"]
        # A second start adds nothing.
        assert seed_presets(lib) == []
    finally:
        ws.close()


def test_a_library_in_use_gets_no_presets(tmp_path: Path) -> None:
    from taverna.services.house.workspace import seed_presets

    ws = open_workspace(tmp_path / "data", background_backups=False)
    try:
        lib = ws.library()
        seed_samples(lib)
        assert seed_presets(lib) == []
        assert not lib.documents(LibraryKind.CHAT_COMPLETION_PRESET)
        assert not lib.documents(LibraryKind.INSTRUCT_TEMPLATE)
    finally:
        ws.close()


def test_the_server_hands_freed_memory_back_while_open_and_stops_when_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    import taverna.services.house.workspace as workspace

    released: list[float] = []
    monkeypatch.setattr(workspace, "release_freed_memory", lambda: released.append(1.0))
    monkeypatch.setattr(workspace, "RELEASE_MEMORY_EVERY", 0.01)
    ws = open_workspace(tmp_path / "data", background_backups=False)

    async def go() -> None:
        await ws.open_http()
        task = ws._releasing
        assert task is not None
        for _ in range(500):
            if released:
                break
            await asyncio.sleep(0.01)
        await ws.close_http()
        assert task.done() and ws._releasing is None

    try:
        asyncio.run(go())
    finally:
        ws.close()
    assert released


def test_the_servers_model_client_streams_more_replies_at_once_than_a_default_pool(
    tmp_path: Path,
) -> None:
    """120 replies streaming at once through the server's one client all start: none
    waits for a pooled connection (httpx's default pool held 100, aiohttp's holds 100)
    and times out."""
    import asyncio

    import aiohttp

    streams = 120
    ws = open_workspace(tmp_path / "data", background_backups=False)
    body = {"model": "stub-model", "messages": [{"role": "user", "content": "hi"}], "stream": True}

    async def first_line(
        client: aiohttp.ClientSession, url: str, started: list[int], everyone: asyncio.Event
    ) -> None:
        timeout = aiohttp.ClientTimeout(total=30, connect=3)
        async with client.post(url, json=body, timeout=timeout) as response:
            async for line in response.content:
                if line.startswith(b"data: "):
                    started.append(1)
                    if len(started) == streams:
                        everyone.set()
                    await everyone.wait()  # the connection stays in use until all started
                    break

    async def go(stub: StubServer) -> list[int]:
        await ws.open_http()
        try:
            client = ws.generation.model_client()
            assert client is not None
            started: list[int] = []
            everyone = asyncio.Event()
            url = f"{stub.base_url('openai')}/chat/completions"
            tasks = [
                asyncio.create_task(first_line(client, url, started, everyone))
                for _ in range(streams)
            ]
            try:
                # every reply holds its connection after its first chunk until released
                await asyncio.wait_for(asyncio.gather(*tasks), 60)
            finally:
                stub.release()
            return started
        finally:
            await ws.close_http()

    try:
        with start_stub() as stub:
            stub.script(*[Reply(tokens=["a", "b"], hold_after=1) for _ in range(streams)])
            assert len(asyncio.run(go(stub))) == streams
    finally:
        ws.close()
