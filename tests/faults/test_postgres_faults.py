"""PostgreSQL stopped and started while a reply streams, and at the moment it is saved, on a
private PostgreSQL of this module's own: the person is told the reply is done (or being
saved), the chat answers a JSON error while the database is away, and once it is back the
reply is in the chat, once. Nothing the page was told has finished is lost.

TAVERNA_FAULT_TRIES=N repeats each fault N times (1 by default)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.stores import PrivatePostgres, private_postgres
from tests.faults.turns import TRIES, Follower, answer, json_error, settled
from tests.stubs.model_server import Reply, StubServer
from tests.stubs.taverna_server import TavernaServer
from tests.support.served import connect, new_chat, send, serving


@pytest.fixture(scope="module")
def pg() -> Iterator[PrivatePostgres]:
    with private_postgres() as found:
        yield found


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, pg: PrivatePostgres, stub: StubServer
) -> Iterator[tuple[TavernaServer, str]]:
    folder: Path = tmp_path_factory.mktemp("pg-faults")
    env = {"TAVERNA_DATABASE_URL": pg.url, "TAVERNA_NO_PLUGINS": "1"}
    with serving(folder / "data", folder / "serve.log", env=env) as found:
        yield found, connect(found, stub)


def _ensure_up(pg: PrivatePostgres) -> None:
    if not pg.running():
        pg.start()


def test_postgres_stopped_at_the_save_loses_no_reply(
    server: tuple[TavernaServer, str], pg: PrivatePostgres, stub: StubServer
) -> None:
    taverna, character = server
    lost = 0
    for attempt in range(TRIES):
        chat_id, revision = new_chat(taverna, character)
        tokens = [f" w{attempt}.{i}" for i in range(12)]
        # held before its last token, so the database goes away just before the save
        stub.script(Reply(tokens=tokens, hold_after=len(tokens) - 1))
        started = send(taverna, chat_id, revision, f"save me {attempt}")
        assert started.status_code == 202, started.text
        follower = Follower(taverna, started.json()["task"]["id"])
        follower.wait_for(len(tokens) - 1)
        pg.stop()
        try:
            stub.release()
            _, event, data = follower.end()
            # what the person is told: done, being saved
            assert (event, data["outcome"]) == ("done", "saving"), data
            assert data["text"] == "".join(tokens).strip()
            # the chat answers a JSON error, not a plain-text 500, while the database is away
            away = answer(taverna, f"/chats/{chat_id}")
            assert away.status_code == 503, away.text
            assert json_error(away)["code"] == "store_unavailable"
            time.sleep(0.5)
        finally:
            _ensure_up(pg)
        kept = settled(taverna, chat_id, data["text"])
        assert kept <= 1, "stored twice"
        lost += kept == 0
    assert lost == 0, f"{lost} of {TRIES} replies lost"


def test_postgres_restarted_mid_turn_loses_no_reply(
    server: tuple[TavernaServer, str], pg: PrivatePostgres, stub: StubServer
) -> None:
    taverna, character = server
    lost = 0
    for attempt in range(TRIES):
        chat_id, revision = new_chat(taverna, character)
        tokens = [f" r{attempt}.{i}" for i in range(30)]
        stub.script(Reply(tokens=tokens, delay=0.05))
        started = send(taverna, chat_id, revision, f"restart {attempt}")
        assert started.status_code == 202, started.text
        follower = Follower(taverna, started.json()["task"]["id"])
        follower.wait_for(5)
        pg.stop()
        try:
            time.sleep(0.3)
        finally:
            _ensure_up(pg)
        _, event, data = follower.end()
        assert event == "done" and data["outcome"] in ("saved", "saving"), data
        assert follower.text() == "".join(tokens)
        kept = settled(taverna, chat_id, data["text"])
        assert kept <= 1, "stored twice"
        lost += kept == 0
    assert lost == 0, f"{lost} of {TRIES} replies lost"
