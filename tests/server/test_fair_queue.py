"""Two accounts on one server, prompts built one at a time: alice sends in many tabs at
once, bob sends once; bob's run is built right after the build running when he sent,
before alice's backlog drains, and his page is told it is queued meanwhile."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from fastapi.testclient import TestClient

from taverna.server.app import create_app
from taverna.server.context import AppContext
from taverna.services.turns import Ask
from tests.server.accounts_fixtures import enable_accounts, log_in
from tests.server.conftest import rev
from tests.stubs.model_server import Reply, StubServer
from tests.support.api import events, stub_connection

TABS = 8
BUILD = 0.15  # seconds each prompt build is held


def _chats(client: TestClient, count: int) -> list[str]:
    card = client.post("/api/characters", json={"name": "Keeper"}).json()
    made = [client.post("/api/chats", json={"character_id": card["id"]}) for _ in range(count)]
    return [str(chat.json()["id"]) for chat in made]


def _send(client: TestClient, chat_id: str, text: str) -> dict[str, Any]:
    body = {"kind": "normal", "text": text, "revision": rev(client, chat_id)}
    answer = client.post(f"/api/chats/{chat_id}/generate", json=body)
    assert answer.status_code == 202, answer.text
    started: dict[str, Any] = answer.json()
    return started


def test_one_accounts_many_tabs_cannot_hold_anothers_turn(
    ctx: AppContext, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    enable_accounts(ctx, "alice", "bob")
    service = ctx.generation
    built: list[str] = []  # the chats whose prompts were built, in order
    plan = service.planner.plan_generation

    def held(chat_id: str, ask: Ask, run: Any = None) -> Any:
        time.sleep(BUILD)
        built.append(chat_id)
        return plan(chat_id, ask, run)

    monkeypatch.setattr(service.planner, "plan_generation", held)
    stub.script(*[Reply(tokens=["Noted."]) for _ in range(TABS + 1)])
    app = create_app(ctx)
    with TestClient(app) as alice, TestClient(app) as bob:
        for who, client in (("alice", alice), ("bob", bob)):
            log_in(client, who)
            connection = stub_connection(stub, "Main", default=True)
            assert client.post("/api/connections", json=connection).status_code == 201
        tabs = _chats(alice, TABS)
        [mine] = _chats(bob, 1)
        sending = threading.Barrier(TABS)

        def tab(chat_id: str) -> dict[str, Any]:
            sending.wait()
            return _send(alice, chat_id, "Hello from a tab")

        with ThreadPoolExecutor(TABS) as pool:
            flood = [pool.submit(tab, chat_id) for chat_id in tabs]
            deadline = time.monotonic() + 10
            while service.build_queue.waiting < TABS - 3 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert service.build_queue.waiting >= TABS - 3  # alice's backlog is there
            # (a build may end between these looks and bob's send: one more either way)
            built_then, waiting_then = len(built), service.build_queue.waiting
            started = _send(bob, mine, "Hello from bob")
            answers = [f.result() for f in flood]
        # bob was told he waits, and where: after the build running, at most one more
        assert started["task"]["status"] == "queued" and 1 <= started["position"] <= 2
        seen = events(bob, started["task"]["id"])
        statuses = [d["type"] for name, d in seen if name == "status"]
        assert statuses[0] == "Queued" and statuses.index("Started") < statuses.index("Posted")
        assert seen[-1][0] == "done"
        for answer in answers:
            assert events(alice, answer["task"]["id"])[-1][0] == "done"
        # alice's tabs sent first, yet bob's build came right after the one running when
        # he sent, before the backlog that waited then (in arrival order it came last)
        assert built.index(mine) <= built_then + 2, built
        after = built[built.index(mine) + 1 :]
        assert len(after) >= waiting_then - 1 and set(after) <= set(tabs)
        shown = bob.get(f"/api/chats/{mine}").json()
        assert [m["content"] for m in shown["messages"]][-2:] == ["Hello from bob", "Noted."]
        assert shown["task"] is None
