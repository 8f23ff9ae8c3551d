"""A worker killed with SIGKILL mid-stream, mid-group-round and mid-summary, on two workers
over one PostgreSQL and one Redis (private ones, of this module's own): the other worker
tells the page the reply broke off, keeps what streamed as a draft in the chat, the
person's message stays, and the chat is free again. Nothing the page was told was kept is
lost.

TAVERNA_FAULT_TRIES=N repeats each fault N times (1 by default)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.faults.stores import private_postgres, private_redis
from tests.faults.turns import TRIES, Follower, messages, until
from tests.stubs.model_server import Reply, StubServer
from tests.stubs.taverna_server import TavernaServer
from tests.support.served import (
    chat_revision,
    connect,
    harbour_group,
    new_chat,
    send,
    serving_workers,
)


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, stub: StubServer
) -> Iterator[tuple[TavernaServer, TavernaServer, str]]:
    folder: Path = tmp_path_factory.mktemp("kills")
    with private_postgres() as pg, private_redis() as redis:
        env = {"TAVERNA_DATABASE_URL": pg.url, "TAVERNA_NO_PLUGINS": "1"}
        with serving_workers(folder, args=("--redis", redis.url), env=env) as (a, b):
            yield a, b, connect(a, stub)


def _free(server: TavernaServer, chat_id: str, stub: StubServer) -> bool:
    """Whether the chat takes the next message on `server` (and saves its reply)."""
    stub.script(Reply(tokens=["still", " here"], delay=0))
    again = send(server, chat_id, chat_revision(server, chat_id), "still there?")
    if again.status_code != 202:
        return False
    return Follower(server, again.json()["task"]["id"]).end()[1] == "done"


def _drafted(server: TavernaServer, chat_id: str, streamed: str) -> bool:
    """Whether the chat's drafts hold the text the page saw stream (it may have streamed
    a little more before the kill)."""
    drafts = server.api("GET", f"/chats/{chat_id}/drafts").json()
    return any(d["text"].startswith(streamed) for d in drafts)


def _round_done(server: TavernaServer, round_id: str) -> bool:
    return bool(server.api("GET", f"/rounds/{round_id}").json()["done"])


def _asked_past(stub: StubServer, asked: int) -> bool:
    return len(stub.requests) > asked


def _summarize(url: str, failure: list[BaseException]) -> None:
    try:
        httpx.post(url, timeout=60)
    except httpx.HTTPError as exc:
        failure.append(exc)


def test_a_worker_killed_mid_stream_loses_nothing(
    cluster: tuple[TavernaServer, TavernaServer, str], stub: StubServer
) -> None:
    a, b, character = cluster
    lost = 0
    for attempt in range(TRIES):
        chat_id, revision = new_chat(a, character)
        stub.script(Reply(tokens=[f" k{attempt}.{i}" for i in range(400)], delay=0.05))
        started = send(a, chat_id, revision, f"then a dies {attempt}")
        assert started.status_code == 202, started.text
        task = started.json()["task"]["id"]
        follower = Follower(b, task)
        follower.wait_for(4)
        a.kill()
        try:
            _, event, data = follower.end(timeout=60)
            assert (event, data["cause"]) == ("error", "interrupted"), data
            seen = follower.text()
            assert seen.startswith(f" k{attempt}.0")
            said = [m["content"] for m in messages(b, chat_id) or []]
            assert said[-1] == f"then a dies {attempt}"  # the person's message stays
            lost += not _drafted(b, chat_id, seen)
            assert _free(b, chat_id, stub)
        finally:
            a.start()
    assert lost == 0, f"{lost} of {TRIES} streamed texts lost"


def test_a_worker_killed_mid_group_round_loses_nothing(
    cluster: tuple[TavernaServer, TavernaServer, str], stub: StubServer
) -> None:
    a, b, _ = cluster
    group = harbour_group(a)
    lost = 0
    for attempt in range(TRIES):
        chat = a.api("POST", f"/groups/{group}/chats", json={}).json()
        chat_id = chat["id"]
        stub.script(Reply(tokens=[f" m{attempt}.{i}" for i in range(400)], delay=0.05))
        started = a.api(
            "POST",
            f"/chats/{chat_id}/round",
            json={"text": f"Hello {attempt}", "revision": chat_revision(a, chat_id)},
        ).json()
        round_id, task = started["round"]["id"], started["task"]["id"]
        follower = Follower(b, task)
        follower.wait_for(3)
        a.kill()
        try:
            _, event, data = follower.end(timeout=60)
            assert (event, data["cause"]) == ("error", "interrupted"), data
            # the round ends with its worker: nobody else speaks
            assert until(functools.partial(_round_done, b, round_id), 20)
            assert len(b.api("GET", f"/rounds/{round_id}").json()["tasks"]) == 1
            said = [m["content"] for m in messages(b, chat_id) or []]
            assert said[-1] == f"Hello {attempt}"
            lost += not _drafted(b, chat_id, follower.text())
            assert _free(b, chat_id, stub)
        finally:
            a.start()
    assert lost == 0, f"{lost} of {TRIES} streamed texts lost"


def test_a_worker_killed_mid_summary_leaves_the_chat_whole_and_free(
    cluster: tuple[TavernaServer, TavernaServer, str], stub: StubServer
) -> None:
    a, b, character = cluster
    broken = 0
    for attempt in range(TRIES):
        chat_id, revision = new_chat(a, character)
        stub.script(Reply(tokens=["A", " reply."], delay=0))
        first = send(a, chat_id, revision, f"something to sum up {attempt}")
        assert Follower(a, first.json()["task"]["id"]).end()[1] == "done"
        before = [(m["id"], m["content"]) for m in messages(a, chat_id) or []]
        asked = len(stub.requests)
        stub.script(Reply(tokens=[f" s{i}" for i in range(400)], delay=0.05))
        failure: list[BaseException] = []

        url = f"{a.url}/api/chats/{chat_id}/summary/generate"
        thread = threading.Thread(target=_summarize, args=(url, failure), daemon=True)
        thread.start()
        assert until(functools.partial(_asked_past, stub, asked), 20)
        a.kill()
        thread.join(30)
        try:
            assert failure, "the summary's request should break off with its worker"
            after = [(m["id"], m["content"]) for m in messages(b, chat_id) or []]
            broken += after != before
            summaries = b.api("GET", f"/chats/{chat_id}/summary").json()
            assert not summaries.get("current"), summaries  # nothing half-made is in force
            assert _free(b, chat_id, stub)
        finally:
            a.start()
    assert broken == 0, f"{broken} of {TRIES} chats changed"
