"""Two real `taverna serve --accounts` processes on one PostgreSQL and one Redis: when the
worker streaming a reply is killed, the other adopts the run and keeps its text as a
draft of the chat's account, which that account finds in its chat (a turn and a group
round alike) and nobody else sees. Skipped when PostgreSQL or Redis is unreachable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.test_workers import REDIS_URL, schema_url
from tests.stubs.model_server import Reply, StubServer
from tests.stubs.taverna_server import TavernaServer
from tests.support.served import Frame, serving_workers, task_events

pytestmark = pytest.mark.postgres

__all__ = ["schema_url"]  # the module's own schema, dropped after it

PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory, schema_url: str) -> Iterator[list[Any]]:
    """Two workers with accounts over one data folder, one database, one Redis; the
    accounts alice and bob are made first, as an operator makes them."""
    folder = tmp_path_factory.mktemp("account-workers")
    env = {"TAVERNA_DATABASE_URL": schema_url, "TAVERNA_NO_PLUGINS": "1"}
    for name, role in (("alice", ("--admin",)), ("bob", ())):
        # alice runs the server (an admin's model URLs may be on 127.0.0.1, the stub's)
        subprocess.run(
            [
                str(Path(sys.executable).parent / "taverna"),
                *("user", "add", name, *role, "--empty", "--data", str(folder / "data")),
            ],
            input=f"{PASSWORD}\n",
            text=True,
            check=True,
            capture_output=True,
            env={**os.environ, **env},
        )
    with serving_workers(folder, args=("--redis", REDIS_URL, "--accounts"), env=env) as started:
        yield started


def _session(server: TavernaServer, name: str) -> httpx.Client:
    """A browser of `name`, logged in on `server`: its cookie and CSRF token are good on
    every worker (the sessions are in the database)."""
    client = httpx.Client(timeout=30)
    answer = client.post(f"{server.url}/api/login", json={"name": name, "password": PASSWORD})
    assert answer.status_code == 200, answer.text
    client.headers["X-CSRF-Token"] = answer.json()["csrf"]
    return client


@pytest.fixture(scope="module")
def alice(workers: list[TavernaServer], stub: StubServer) -> httpx.Client:
    client = _session(workers[0], "alice")
    made = client.post(
        f"{workers[0].url}/api/connections",
        json={
            "name": "stub",
            "api": "openai-compatible",
            "url": stub.base_url("openai"),
            "model": "stub-model",
            "default": True,
        },
    )
    assert made.status_code == 201, made.text
    return client


def _api(client: httpx.Client, server: TavernaServer, method: str, path: str, **kw: Any) -> Any:
    answer = client.request(method, f"{server.url}/api{path}", **kw)
    assert answer.status_code < 300, answer.text
    return answer.json() if answer.content else None


def _followed_until_killed(
    client: httpx.Client, a: TavernaServer, b: TavernaServer, task: str
) -> tuple[list[Frame], Frame]:
    """Follow a's run from b, kill a after four pieces, follow on to the end."""
    seen = task_events(b, task, client=client, until_deltas=4)
    assert a.process is not None
    os.kill(a.process.pid, signal.SIGKILL)
    a.process.wait()
    began = time.monotonic()
    rest = task_events(b, task, client=client, since=seen[-1][0])
    assert time.monotonic() - began < 20
    return [*seen, *rest], rest[-1]


def test_a_killed_workers_draft_is_its_owners(
    workers: list[TavernaServer], stub: StubServer, alice: httpx.Client
) -> None:
    a, b = workers
    card = _api(alice, a, "POST", "/characters", json={"name": "Keeper", "first_mes": "Hi."})
    chat = _api(alice, a, "POST", "/chats", json={"character_id": card["id"]})
    stub.script(Reply(tokens=[f" k{i}" for i in range(400)], delay=0.05))
    started = _api(
        alice,
        a,
        "POST",
        f"/chats/{chat['id']}/generate",
        json={"kind": "normal", "text": "then a dies", "revision": chat["revision"]},
    )
    task = started["task"]["id"]
    _, end = _followed_until_killed(alice, a, b, task)
    assert end[1] == "error" and end[2]["cause"] == "interrupted"
    assert end[2]["draft_id"]
    # alice finds the draft in her chat, through the other worker
    drafts = _api(alice, b, "GET", f"/chats/{chat['id']}/drafts")
    assert [d["id"] for d in drafts] == [end[2]["draft_id"]]
    assert drafts[0]["text"].startswith(" k0 k1 k2 k3")
    assert drafts[0]["reason"] == "the server stopped while it streamed"
    # and keeps it as the reply
    current = _api(alice, b, "GET", f"/chats/{chat['id']}")["revision"]
    _api(
        alice,
        b,
        "POST",
        f"/drafts/{end[2]['draft_id']}/keep",
        json={"revision": current},
    )
    messages = _api(alice, b, "GET", f"/chats/{chat['id']}")["messages"]
    assert messages[-1]["content"].strip().startswith("k0 k1 k2 k3")
    # bob sees neither her chat nor its drafts
    bob = _session(b, "bob")
    assert bob.get(f"{b.url}/api/chats/{chat['id']}/drafts").status_code == 404
    a.start()


def test_a_killed_workers_group_round_draft_is_its_owners(
    workers: list[TavernaServer], stub: StubServer, alice: httpx.Client
) -> None:
    a, b = workers
    if a.process is None or a.process.poll() is not None:
        a.start()  # the test before may have ended before starting it again
    ids = [
        _api(alice, a, "POST", "/characters", json={"name": n, "first_mes": f"{n} waves."})["id"]
        for n in ("Mira", "小雪")
    ]
    group = _api(
        alice,
        a,
        "POST",
        "/groups",
        json={"name": "Harbour", "character_ids": ids, "activation_strategy": "list"},
    )
    chat = _api(alice, a, "POST", f"/groups/{group['id']}/chats", json={})
    revision = _api(alice, a, "GET", f"/chats/{chat['id']}")["revision"]
    stub.script(Reply(tokens=[f" m{i}" for i in range(400)], delay=0.05))
    started = _api(
        alice, a, "POST", f"/chats/{chat['id']}/round", json={"text": "Hello", "revision": revision}
    )
    task = started["task"]["id"]
    _, end = _followed_until_killed(alice, a, b, task)
    assert end[1] == "error" and end[2]["draft_id"]
    drafts = _api(alice, b, "GET", f"/chats/{chat['id']}/drafts")
    assert [d["id"] for d in drafts] == [end[2]["draft_id"]]
    assert drafts[0]["text"].startswith(" m0 m1 m2 m3")
    assert task_events(b, task, client=alice)[-1][1] == "error"
    deadline = time.monotonic() + 15
    found = _api(alice, b, "GET", f"/rounds/{started['round']['id']}")
    while not found["done"] and time.monotonic() < deadline:
        time.sleep(0.3)
        found = _api(alice, b, "GET", f"/rounds/{started['round']['id']}")
    assert found["done"]
    a.start()
