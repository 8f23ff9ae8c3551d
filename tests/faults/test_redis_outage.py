"""Redis stopped while a reply streams, on two workers over one PostgreSQL (private ones, of
this module's own): each worker goes on with its own runs, every chat view answers on both,
the busy chat stays busy (a second generation is refused on the other worker), and when
Redis comes back (empty) everything recovers by itself; the reply lands on the chat's
active path, once.

TAVERNA_FAULT_TRIES=N repeats the fault N times (1 by default)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.faults.stores import PrivateRedis, private_postgres, private_redis
from tests.faults.turns import TRIES, Follower, answer, messages, settled
from tests.stubs.model_server import Reply, StubServer
from tests.stubs.taverna_server import TavernaServer
from tests.support.served import chat_revision, connect, new_chat, send, serving_workers


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, stub: StubServer
) -> Iterator[tuple[PrivateRedis, TavernaServer, TavernaServer, str]]:
    folder: Path = tmp_path_factory.mktemp("redis-outage")
    with private_postgres() as pg, private_redis() as redis:
        env = {"TAVERNA_DATABASE_URL": pg.url, "TAVERNA_NO_PLUGINS": "1"}
        with serving_workers(folder, args=("--redis", redis.url), env=env) as (a, b):
            yield redis, a, b, connect(a, stub)


def _one_outage(
    cluster: tuple[PrivateRedis, TavernaServer, TavernaServer, str],
    stub: StubServer,
    attempt: int,
) -> dict[str, Any]:
    redis, a, b, character = cluster
    chat_id, revision = new_chat(a, character)
    tokens = [f" d{attempt}.{i}" for i in range(100)]
    # held after 80 tokens (4 s) until the test lets it end: still streaming once Redis
    # is back, however slow the machine
    stub.script(Reply(tokens=tokens, delay=0.05, hold_after=80))
    started = send(a, chat_id, revision, f"through the outage {attempt}")
    assert started.status_code == 202, started.text
    follower = Follower(a, started.json()["task"]["id"])
    follower.wait_for(5)
    redis.stop()
    try:
        # the page on the run's worker goes on streaming
        streamed_while_away = follower.deltas()
        time.sleep(1.0)
        grew = follower.deltas() > streamed_while_away
        # every chat view answers, on both workers
        views = [answer(server, f"/chats/{chat_id}").status_code for server in (a, b)]
        views += [answer(server, "/chats").status_code for server in (a, b)]
        # the busy chat stays busy: the other worker refuses a second generation
        during = send(b, chat_id, chat_revision(b, chat_id), "me too")
    finally:
        redis.start()  # back, and empty
    time.sleep(1.5)  # the run's claim is written again, its events copied
    after = send(b, chat_id, chat_revision(b, chat_id), "me too, now?")
    stub.release()
    _, event, data = follower.end()
    kept = settled(a, chat_id, data["text"])
    path = messages(b, chat_id) or []
    # recovered: the other worker generates in the chat once it is free
    stub.script(Reply(tokens=["after"], delay=0))
    again = send(b, chat_id, chat_revision(b, chat_id), "and now")
    end_again = Follower(b, again.json()["task"]["id"]).end() if again.status_code == 202 else None
    return {
        "views": views,
        "during": during.status_code,
        "grew": grew,
        "after": after.status_code,
        "event": event,
        "outcome": data.get("outcome"),
        "whole": follower.text() == "".join(tokens),
        "kept": kept,
        "last": path[-1]["content"] if path else None,
        "text": data["text"],
        "again": (again.status_code, end_again[1] if end_again else None),
    }


def test_a_redis_outage_mid_stream_degrades_and_recovers(
    cluster: tuple[PrivateRedis, TavernaServer, TavernaServer, str], stub: StubServer
) -> None:
    lost = 0
    for attempt in range(TRIES):
        seen = _one_outage(cluster, stub, attempt)
        assert seen["views"] == [200, 200, 200, 200], seen
        assert seen["during"] == 409, seen  # busy through the lease in the database
        assert seen["grew"], seen  # the page on the run's worker went on streaming
        assert seen["after"] == 409, seen  # still busy once Redis is back
        assert (seen["event"], seen["outcome"]) == ("done", "saved"), seen
        assert seen["whole"], seen
        assert seen["kept"] <= 1, seen
        lost += seen["kept"] == 0
        # on the active path: the last message the chat shows
        assert seen["last"] == seen["text"], seen
        assert seen["again"] == (202, "done"), seen
    assert lost == 0, f"{lost} of {TRIES} replies lost"
