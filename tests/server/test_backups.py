"""Chat writes through the API are backed up into the data folder's backups folder,
throttled per chat, and what is pending is written when the server shuts down."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from taverna.server.app import create_app
from taverna.server.context import AppContext, open_context
from tests.server.conftest import rev
from tests.stubs.model_server import Reply, StubServer
from tests.support.api import connect, events, generate, start_chat


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(ctx: AppContext) -> Clock:
    clock = Clock()
    ctx.backups.clock = clock
    return clock


def files(ctx: AppContext) -> list[Path]:
    folder = ctx.data_dir / "backups"
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []


def new_chat(client: TestClient) -> str:
    return start_chat(client, name="Mira", first_mes="Hello.")


def test_a_new_chat_is_backed_up_at_once(client: TestClient, ctx: AppContext, clock: Clock) -> None:
    chat_id = new_chat(client)
    assert [b.key for b in ctx.backups.backups()] == [ctx.backups.backups(chat_id)[0].key]
    assert "Hello." in files(ctx)[0].read_text(encoding="utf-8")


def test_writes_in_a_burst_leave_one_pending_backup_written_after_the_interval(
    client: TestClient, ctx: AppContext, clock: Clock
) -> None:
    chat_id = new_chat(client)
    leaf = client.get(f"/api/chats/{chat_id}").json()["messages"][-1]["id"]
    edited = client.patch(
        f"/api/chats/{chat_id}/messages/{leaf}",
        json={"content": "Edited.", "revision": rev(client, chat_id)},
    )
    assert edited.status_code == 200
    assert len(files(ctx)) == 1 and chat_id in ctx.backups.pending
    clock.now += ctx.backups.interval
    ctx.backups.flush()  # what the background flusher does every second
    assert len(files(ctx)) == 2 and not ctx.backups.pending
    assert "Edited." in ctx.backups.backups(chat_id)[0].path.read_text(encoding="utf-8")


def test_a_failed_write_backs_nothing_up(client: TestClient, ctx: AppContext, clock: Clock) -> None:
    chat_id = new_chat(client)
    clock.now += ctx.backups.interval
    missing = client.patch(
        f"/api/chats/{chat_id}/messages/nope",
        json={"content": "x", "revision": rev(client, chat_id)},
    )
    assert missing.status_code == 404
    assert len(files(ctx)) == 1 and not ctx.backups.pending


def test_a_stored_reply_is_backed_up(
    client: TestClient, ctx: AppContext, clock: Clock, stub: StubServer
) -> None:
    connect(client, stub)
    chat_id = new_chat(client)
    clock.now += ctx.backups.interval
    # Slow enough that the reply lands well after the request that started it returned.
    stub.script(Reply(tokens=["The tide ", "turns."], delay=0.2))
    started = generate(client, chat_id, kind="normal", text="Hi")
    seen = events(client, started["task"]["id"])
    assert seen[-1][0] == "done", seen[-1][1]
    # The user's message and the reply, within the interval, are pending once the server
    # has settled the generation: one backup, written by the flusher.
    deadline = time.monotonic() + 5
    while ctx.services.get("settling") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert chat_id in ctx.backups.pending
    clock.now += ctx.backups.interval
    ctx.backups.flush()
    assert "The tide turns." in ctx.backups.backups(chat_id)[0].path.read_text(encoding="utf-8")


def test_shutdown_writes_what_is_pending(tmp_path: Path) -> None:
    ctx = open_context(tmp_path / "data")
    ctx.backups.clock = Clock()
    with TestClient(create_app(ctx)) as client:
        chat_id = new_chat(client)
        renamed = client.patch(
            f"/api/chats/{chat_id}", json={"title": "Renamed", "revision": rev(client, chat_id)}
        )
        assert renamed.status_code == 200, renamed.text
        assert chat_id in ctx.backups.pending
    assert "renamed" in [b.title for b in ctx.backups.backups(chat_id)]
    assert not ctx.backups.pending
