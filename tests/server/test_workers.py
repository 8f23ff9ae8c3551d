"""Two real `taverna serve` processes on one PostgreSQL and one Redis: a generation started
on one is followed, resumed and stopped from the other, and one killed mid-stream leaves
its text as a draft the other finds. Skipped when PostgreSQL or Redis is unreachable."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.stubs.model_server import Reply, StubServer
from tests.stubs.taverna_server import TavernaServer
from tests.support.folders import own_schema
from tests.support.served import (
    connect,
    harbour_group,
    new_chat,
    send,
    serving_workers,
    task_events,
)

pytestmark = pytest.mark.postgres

REDIS_URL = os.environ.get("TAVERNA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
DATABASE_URL = os.environ.get("TAVERNA_TEST_DATABASE_URL", "")


def _redis_up() -> bool:
    try:
        import redis
    except ImportError:
        return False
    try:
        return bool(redis.Redis.from_url(REDIS_URL, socket_timeout=1).ping())
    except redis.RedisError:
        return False


@pytest.fixture(scope="module")
def schema_url() -> Iterator[str]:
    """A database URL whose tables live in a schema of their own, dropped afterwards."""
    # CI starts both (.ci/run): there a missing one is a failure, not a skip
    missing = pytest.fail if os.environ.get("CI") else pytest.skip
    if not DATABASE_URL.startswith("postgresql"):
        missing("needs TAVERNA_TEST_DATABASE_URL (PostgreSQL)")
    if not _redis_up():
        missing(f"needs Redis at {REDIS_URL}")
    with own_schema(DATABASE_URL, "w_") as url:
        yield url


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory, schema_url: str) -> Iterator[list[Any]]:
    """Two workers over one data folder (its server key), one database, one Redis."""
    env = {"TAVERNA_DATABASE_URL": schema_url, "TAVERNA_NO_PLUGINS": "1"}
    folder = tmp_path_factory.mktemp("workers")
    with serving_workers(folder, args=("--redis", REDIS_URL), env=env) as started:
        yield started


@pytest.fixture(scope="module")
def chat_setup(workers: list[TavernaServer], stub: StubServer) -> str:
    return connect(workers[0], stub)


def _send(server: TavernaServer, chat_id: str, revision: int, text: str) -> str:
    answer = send(server, chat_id, revision, text)
    assert answer.status_code == 202, answer.text
    return str(answer.json()["task"]["id"])


def test_a_run_started_on_one_worker_is_followed_and_resumed_from_the_other(
    workers: list[TavernaServer], stub: StubServer, chat_setup: str
) -> None:
    a, b = workers
    chat_id, revision = new_chat(a, chat_setup)
    tokens = [f" w{i}" for i in range(40)]
    stub.script(Reply(tokens=tokens, delay=0.05))
    task = _send(a, chat_id, revision, "hello from a")
    # b sees the chat busy with a's run, and follows it live to its end
    assert b.api("GET", f"/chats/{chat_id}").json()["task"]["id"] == task
    followed = task_events(b, task)
    assert followed[-1][1] == "done"
    assert "".join(d["text"] for _, e, d in followed if e == "delta") == "".join(tokens)
    assert followed[-1][2]["text"] == "".join(tokens).strip()
    # the reply is stored once, read the same from either worker
    for server in (a, b):
        messages = server.api("GET", f"/chats/{chat_id}").json()["messages"]
        assert messages[-1]["content"] == "".join(tokens).strip()
    # replay from b after the end: every event, in order, with a's indices
    replay = task_events(b, task)
    assert [i for i, _, _ in replay] == [i for i, _, _ in followed]
    # resume after an event id, as a reconnecting page does
    middle = followed[len(followed) // 2][0]
    resumed = task_events(b, task, since=middle)
    assert [i for i, _, _ in resumed] == [i for i, _, _ in followed if i > middle]
    assert b.api("GET", f"/tasks/{task}").json()["status"] == "done"


def test_a_chat_written_on_one_worker_is_what_the_others_next_prompt_holds(
    workers: list[TavernaServer], stub: StubServer, chat_setup: str
) -> None:
    """No message between the workers is needed: what b keeps of the chat's path is
    brought up to date from the store when its next prompt is built."""
    a, b = workers
    chat_id, revision = new_chat(a, chat_setup)
    stub.script(Reply(tokens=["First", " reply."]))
    assert task_events(a, _send(a, chat_id, revision, "the lantern"))[-1][1] == "done"
    assert "the lantern" in b.api("GET", f"/chats/{chat_id}/prompt").text  # b keeps it now
    chat = a.api("GET", f"/chats/{chat_id}").json()
    mine = [m for m in chat["messages"] if m["role"] == "user"][-1]
    a.api(
        "PATCH",
        f"/chats/{chat_id}/messages/{mine['id']}",
        json={"content": "the candle", "revision": chat["revision"]},
    )
    shown = b.api("GET", f"/chats/{chat_id}/prompt").text
    assert "the candle" in shown and "the lantern" not in shown
    revision = int(a.api("GET", f"/chats/{chat_id}").json()["revision"])
    stub.script(Reply(tokens=["Second", " reply."]))
    assert task_events(a, _send(a, chat_id, revision, "and then"))[-1][1] == "done"
    shown = b.api("GET", f"/chats/{chat_id}/prompt").text
    assert "Second reply." in shown and "and then" in shown


def test_a_run_is_stopped_from_the_other_worker_and_its_text_kept_as_a_draft(
    workers: list[TavernaServer], stub: StubServer, chat_setup: str
) -> None:
    a, b = workers
    chat_id, revision = new_chat(a, chat_setup)
    stub.script(Reply(tokens=[f" s{i}" for i in range(200)], delay=0.05))
    task = _send(a, chat_id, revision, "stop me")
    seen = task_events(b, task, until_deltas=3)
    assert [e for _, e, _ in seen].count("delta") == 3
    # a second start in the busy chat is refused on the other worker too
    current = b.api("GET", f"/chats/{chat_id}").json()["revision"]
    busy = httpx.post(
        f"{b.url}/api/chats/{chat_id}/generate",
        json={"kind": "normal", "text": "me too", "revision": current},
        timeout=30,
    )
    assert busy.status_code == 409, busy.text
    stopped = httpx.post(f"{b.url}/api/tasks/{task}/stop", timeout=30).json()
    assert stopped["outcome"] == "stopped"
    assert stopped["draft_id"]
    drafts = b.api("GET", f"/chats/{chat_id}/drafts").json()
    assert [d["id"] for d in drafts] == [stopped["draft_id"]]
    assert drafts[0]["text"].startswith(" s0 s1 s2")
    assert a.api("GET", f"/chats/{chat_id}").json()["task"] is None
    assert task_events(a, task)[-1][1] == "cancelled"


def test_a_group_round_is_read_and_stopped_from_the_other_worker(
    workers: list[TavernaServer], stub: StubServer, chat_setup: str
) -> None:
    a, b = workers
    group = harbour_group(a)
    chat = a.api("POST", f"/groups/{group}/chats", json={}).json()
    revision = a.api("GET", f"/chats/{chat['id']}").json()["revision"]
    stub.script(Reply(tokens=[f" m{i}" for i in range(200)], delay=0.05))
    started = a.api(
        "POST", f"/chats/{chat['id']}/round", json={"text": "Hello", "revision": revision}
    ).json()
    round_id = started["round"]["id"]
    seen = b.api("GET", f"/rounds/{round_id}").json()
    assert seen["speakers"] == ["Mira", "小雪"]
    assert [t["id"] for t in seen["tasks"]] == [started["task"]["id"]]
    assert not seen["done"]
    task_events(b, started["task"]["id"], until_deltas=2)
    b.api("POST", f"/rounds/{round_id}/stop")
    deadline = time.monotonic() + 15
    while not seen["done"] and time.monotonic() < deadline:
        time.sleep(0.2)
        seen = b.api("GET", f"/rounds/{round_id}").json()
    assert seen["done"]
    assert len(seen["tasks"]) == 1  # nobody spoke after the stop
    assert task_events(b, started["task"]["id"])[-1][1] == "cancelled"
    assert a.api("GET", f"/rounds/{round_id}").json()["done"]


def test_a_worker_killed_mid_stream_leaves_its_draft_for_the_other(
    workers: list[TavernaServer], stub: StubServer, chat_setup: str
) -> None:
    a, b = workers
    chat_id, revision = new_chat(a, chat_setup)
    stub.script(Reply(tokens=[f" k{i}" for i in range(400)], delay=0.05))
    task = _send(a, chat_id, revision, "then a dies")
    seen = task_events(b, task, until_deltas=4)
    assert a.process is not None
    os.kill(a.process.pid, signal.SIGKILL)
    a.process.wait()
    began = time.monotonic()
    rest = task_events(b, task, since=seen[-1][0])
    assert time.monotonic() - began < 20
    end = rest[-1]
    assert end[1] == "error", rest
    assert end[2]["cause"] == "interrupted"
    streamed = "".join(d["text"] for _, e, d in [*seen, *rest] if e == "delta")
    assert streamed.startswith(" k0 k1 k2 k3")
    # the page re-attaches on b: no run going, the partial text waits as a draft
    view = b.api("GET", f"/chats/{chat_id}").json()
    assert view["task"] is None
    drafts = b.api("GET", f"/chats/{chat_id}/drafts").json()
    assert [d["id"] for d in drafts] == [end[2]["draft_id"]]
    assert drafts[0]["text"] == end[2]["text"]
    assert drafts[0]["text"].startswith(" k0 k1 k2 k3")
    # the chat is free: b answers the next message
    stub.script(Reply(tokens=["after"], delay=0))
    current = b.api("GET", f"/chats/{chat_id}").json()["revision"]
    again = _send(b, chat_id, int(current), "still here?")
    assert task_events(b, again)[-1][1] == "done"
    a.start()  # the module's other tests may follow


def test_a_killed_workers_run_is_adopted_when_the_chat_is_opened(
    workers: list[TavernaServer], stub: StubServer, chat_setup: str
) -> None:
    """Nobody followed the run when its worker died: opening the chat on the other worker
    finds it orphaned, keeps its text as a draft and frees the chat."""
    a, b = workers
    chat_id, revision = new_chat(a, chat_setup)
    stub.script(Reply(tokens=[f" o{i}" for i in range(400)], delay=0.05))
    task = _send(a, chat_id, revision, "nobody watches")
    task_events(a, task, until_deltas=3)
    time.sleep(0.3)  # a's copy of the events reaches Redis
    a.kill()
    deadline = time.monotonic() + 15
    view = b.api("GET", f"/chats/{chat_id}").json()
    while view["task"] is not None and time.monotonic() < deadline:
        time.sleep(0.5)  # a's lease runs out
        view = b.api("GET", f"/chats/{chat_id}").json()
    assert view["task"] is None
    drafts = b.api("GET", f"/chats/{chat_id}/drafts").json()
    assert len(drafts) == 1
    assert drafts[0]["text"].startswith(" o0 o1 o2")
    assert task_events(b, task)[-1][1] == "error"
