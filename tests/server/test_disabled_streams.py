"""A disabled account's open event streams close: the stream of a generation it follows
ends soon after an admin disables it (the run itself goes on), and following it again is
refused. Without accounts a stream is never cut."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from taverna.server import session_streams
from taverna.server.app import create_app
from taverna.server.context import AppContext
from tests.server.accounts_fixtures import enable_accounts, log_in
from tests.server.conftest import rev
from tests.server.test_accounts_generation import _set_up
from tests.stubs.model_server import Reply, StubServer, start_stub


@pytest.fixture
def model() -> Iterator[StubServer]:
    with start_stub(key="sk-alice-0001") as stub:
        yield stub


class Follower:
    """Reads a task's event stream on a thread of its own: the events, and whether the
    stream has ended."""

    def __init__(self, client: TestClient, task_id: str) -> None:
        self.events: list[str] = []
        self.ended = threading.Event()
        self.thread = threading.Thread(target=self._read, args=(client, task_id), daemon=True)
        self.thread.start()

    def _read(self, client: TestClient, task_id: str) -> None:
        try:
            with client.stream("GET", f"/api/tasks/{task_id}/events") as response:
                for line in response.iter_lines():
                    if line.startswith("event: "):
                        self.events.append(line[7:])
        finally:
            self.ended.set()


def test_an_admin_disabling_an_account_closes_its_streams(
    ctx: AppContext, model: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session_streams, "RECHECK", 0.1)
    enable_accounts(ctx, "alice", admin="root")
    app = create_app(ctx)
    with TestClient(app) as alice, TestClient(app) as admin:
        log_in(alice, "alice")
        log_in(admin, "root")
        chat_id = _set_up(alice, "alice", model)
        model.script(Reply(tokens=["Still", " going", "."], hold_after=1))
        body = {"kind": "normal", "text": "Hello", "revision": rev(alice, chat_id)}
        started = alice.post(f"/api/chats/{chat_id}/generate", json=body)
        assert started.status_code == 202, started.text
        task_id = started.json()["task"]["id"]
        follower = Follower(alice, task_id)
        try:
            # the stream is open and live: it waits for the held reply
            assert not follower.ended.wait(0.5)
            disabled = admin.put("/api/users/alice/disabled", json={"disabled": True})
            assert disabled.status_code == 200, disabled.text
            assert follower.ended.wait(10), "the disabled account's stream is still open"
            assert "done" not in follower.events
            again = alice.get(f"/api/tasks/{task_id}/events")
            assert again.status_code == 401
        finally:
            model.release()
            follower.thread.join(10)
        # the run went on to its end: the reply is in the chat
        assert admin.put("/api/users/alice/disabled", json={"disabled": False}).status_code == 200
        log_in(alice, "alice")
        for _ in range(100):
            task = alice.get(f"/api/tasks/{task_id}")
            if task.status_code != 200 or task.json()["status"] != "running":
                break
            threading.Event().wait(0.1)
        last = alice.get(f"/api/chats/{chat_id}").json()["messages"][-1]
        assert last["content"] == "Still going."


def test_without_accounts_a_stream_is_never_cut(
    client: TestClient, ctx: AppContext, model: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session_streams, "RECHECK", 0.05)
    chat_id = _set_up(client, "me", model)
    model.script(Reply(tokens=["A", " slow", " reply", "."], delay=0.2))
    body = {"kind": "normal", "text": "Hello", "revision": rev(client, chat_id)}
    started = client.post(f"/api/chats/{chat_id}/generate", json=body)
    follower = Follower(client, started.json()["task"]["id"])
    assert follower.ended.wait(20)
    assert follower.events[-1] == "done"
