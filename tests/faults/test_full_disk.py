"""The data folder's disk fills while a reply streams (a small tmpfs mounted for the test, on
SQLite): the person is told the reply is done and being saved, writes answer a JSON 507,
no empty backup file is left behind, and once there is room the reply is in the chat, once.

TAVERNA_FAULT_TRIES=N repeats the fault N times (1 by default)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.faults.stores import fill, small_volume, wal_emptied
from tests.faults.turns import TRIES, Follower, json_error, settled
from tests.stubs.model_server import Reply, StubServer
from tests.stubs.taverna_server import TavernaServer
from tests.support.served import connect, new_chat, send, serving


@pytest.fixture(scope="module")
def volume() -> Iterator[Path]:
    with small_volume(64) as found:
        yield found


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, volume: Path, stub: StubServer
) -> Iterator[tuple[TavernaServer, str]]:
    log = tmp_path_factory.mktemp("full-disk") / "serve.log"  # the log is not on the volume
    env = {"TAVERNA_NO_PLUGINS": "1", "TAVERNA_DATABASE_URL": ""}
    with serving(volume / "data", log, env=env) as found:
        yield found, connect(found, stub)


def test_a_full_disk_at_the_save_loses_no_reply(
    server: tuple[TavernaServer, str], volume: Path, stub: StubServer
) -> None:
    taverna, character = server
    lost = 0
    for attempt in range(TRIES):
        chat_id, revision = new_chat(taverna, character)
        tokens = [f" f{attempt}.{i}" for i in range(12)]
        stub.script(Reply(tokens=tokens, hold_after=len(tokens) - 1))
        started = send(taverna, chat_id, revision, f"fill it {attempt}")
        assert started.status_code == 202, started.text
        follower = Follower(taverna, started.json()["task"]["id"])
        follower.wait_for(len(tokens) - 1)
        wal_emptied(taverna.data)
        filler = fill(volume)
        try:
            stub.release()
            _, event, data = follower.end()
            assert (event, data["outcome"]) == ("done", "saving"), data
            assert data["text"] == "".join(tokens).strip()
            # reads answer; a write answers the JSON error shape, 507
            refused = httpx.post(
                f"{taverna.url}/api/chats", json={"character_id": character}, timeout=30
            )
            assert refused.status_code == 507, refused.text
            assert json_error(refused)["code"] == "disk_full"
            drafts = httpx.get(f"{taverna.url}/api/chats/{chat_id}/drafts", timeout=30).json()
            assert [d["saving"] for d in drafts] == [True]
        finally:
            with contextlib.suppress(FileNotFoundError):
                filler.unlink()  # room again
        kept = settled(taverna, chat_id, data["text"])
        assert kept <= 1, "stored twice"
        lost += kept == 0
        backups = taverna.data / "backups"
        left = [p.name for p in backups.rglob("*.tmp")] if backups.exists() else []
        assert left == [], left
    assert lost == 0, f"{lost} of {TRIES} replies lost"
