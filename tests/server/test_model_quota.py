"""An account's hourly quota counts every request to a model, whatever sent it (a turn,
a script's `/gen` and `/genraw`, a Quick Reply, a summary, a group round, a connection's
test), refuses the ones past it with a 429 before anything reaches the model, and My
account shows the true count. The model here is a stub on 127.0.0.1 that counts what it
received."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient

from taverna.server.app import create_app
from taverna.server.context import AppContext
from tests.server.accounts_fixtures import enable_accounts, log_in
from tests.server.conftest import rev
from tests.server.test_generation import events
from tests.stubs.model_server import Reply, StubServer, start_stub
from tests.support.api import stub_connection

KEY = "sk-quota-test-0001"
QUOTA = 2
USED_UP = "2 of 2 model requests this hour"


@dataclass
class Alice:
    client: TestClient
    chat_id: str
    stub: StubServer

    def sent(self) -> int:
        """How many requests the model received."""
        return len(self.stub.requests)

    def script(self, text: str) -> tuple[int, dict]:  # type: ignore[type-arg]
        answer = self.client.post(
            f"/api/chats/{self.chat_id}/script",
            json={"text": text, "revision": rev(self.client, self.chat_id)},
        )
        return answer.status_code, answer.json()

    def start(self, kind: str = "normal", text: str = "") -> tuple[int, dict]:  # type: ignore[type-arg]
        body = {"kind": kind, "revision": rev(self.client, self.chat_id)}
        if text:
            body["text"] = text
        answer = self.client.post(f"/api/chats/{self.chat_id}/generate", json=body)
        return answer.status_code, answer.json()

    def used(self) -> tuple[int, int | None]:
        mine = self.client.get("/api/me/account").json()
        return mine["generations_last_hour"], mine["generations_per_hour"]


@pytest.fixture
def alice(ctx: AppContext) -> Iterator[Alice]:
    accounts = enable_accounts(ctx, "alice")
    accounts.set_quota("alice", storage_bytes=None, generations_per_hour=QUOTA)
    with start_stub(key=KEY) as stub, TestClient(create_app(ctx)) as client:
        log_in(client, "alice")
        connection = stub_connection(stub, "Main", key=KEY, default=True)
        assert client.post("/api/connections", json=connection).status_code == 201
        card = client.post("/api/characters", json={"name": "Keeper", "first_mes": "Hello."})
        chat = client.post("/api/chats", json={"character_id": card.json()["id"]}).json()
        yield Alice(client, chat["id"], stub)


def _refused(status: int, body: dict) -> None:  # type: ignore[type-arg]
    assert status == 429, body
    assert body["detail"]["code"] == "generation_quota_used"
    assert USED_UP in body["detail"]["message"]


def test_a_script_loop_sends_only_what_the_quota_has_left(alice: Alice) -> None:
    status, started = alice.start(text="Hi")
    assert status == 202, started
    finished = events(alice.client, started["task"]["id"])[-1]
    assert finished[0] == "done", str(finished)
    assert alice.sent() == 1 and alice.used() == (1, QUOTA)
    status, body = alice.script("/times 30 {: /genraw say hi :}")
    # one request was left: it went out, the next was refused and ended the script
    _refused(status, body)
    assert "/genraw" in body["detail"]["message"]
    assert alice.sent() == 2
    assert alice.used() == (2, QUOTA)
    status, body = alice.script("/gen say hi | /setvar key=said")
    _refused(status, body)
    assert alice.sent() == 2 and alice.used() == (2, QUOTA)


def test_every_kind_of_model_request_is_refused_past_the_quota(
    alice: Alice, ctx: AppContext
) -> None:
    status, body = alice.script("/genraw one | /genraw two")
    assert status == 200, body
    assert alice.sent() == 2 and alice.used() == (2, QUOTA)
    # turns of every kind, before anything is written
    messages = alice.client.get(f"/api/chats/{alice.chat_id}").json()["messages"]
    for kind, text in (
        ("normal", "Hi"),
        ("swipe", ""),
        ("continue", ""),
        ("impersonate", ""),
    ):
        _refused(*alice.start(kind, text))
    assert alice.client.get(f"/api/chats/{alice.chat_id}").json()["messages"] == messages
    # a summary made now
    made = alice.client.post(f"/api/chats/{alice.chat_id}/summary/generate")
    _refused(made.status_code, made.json())
    # a Quick Reply the page runs on the person's message: its script asks the model
    quick = {
        "name": "Auto",
        "active": True,
        "replies": [
            {"label": "Muse", "message": "/gen muse | /setvar key=m", "triggers": ["user"]}
        ],
    }
    assert alice.client.put("/api/quick-replies", json=quick).status_code == 200
    offered = alice.client.get(f"/api/chats/{alice.chat_id}/quick-replies").json()["replies"]
    _refused(*alice.script(offered[0]["message"]))
    # a connection's test is a request to the model too
    tested = alice.client.post("/api/connections/Main/test")
    _refused(tested.status_code, tested.json())
    assert alice.sent() == 2
    assert alice.used() == (2, QUOTA)


def test_a_group_round_stops_at_the_quota(alice: Alice) -> None:
    client = alice.client
    ids = [
        client.post("/api/characters", json={"name": n, "first_mes": f"{n} waves."}).json()["id"]
        for n in ("Mira", "Élodie", "小雪")
    ]
    group = client.post(
        "/api/groups",
        json={"name": "Harbour", "character_ids": ids, "activation_strategy": "list"},
    ).json()
    chat = client.post(f"/api/groups/{group['id']}/chats", json={}).json()
    alice.stub.script(*[Reply(tokens=[f"reply {i}"]) for i in range(3)])
    started = client.post(
        f"/api/chats/{chat['id']}/round",
        json={"text": "Hello", "revision": rev(client, chat["id"])},
    )
    assert started.status_code == 202, started.text
    round_id = started.json()["round"]["id"]
    assert started.json()["round"]["speakers"] == ["Mira", "Élodie", "小雪"]
    for _ in range(500):
        found = client.get(f"/api/rounds/{round_id}").json()
        if found["done"]:
            break
        if found["tasks"]:
            events(client, found["tasks"][-1]["id"])
    assert found["done"]
    # two members spoke; the third was refused, and nothing was sent for it
    assert len(found["tasks"]) == 2
    assert alice.sent() == 2 and alice.used() == (2, QUOTA)
    shown = client.get(f"/api/chats/{chat['id']}").json()["messages"]
    assert [m["content"] for m in shown][-2:] == ["reply 0", "reply 1"]
    # a new round is refused at once
    again = client.post(
        f"/api/chats/{chat['id']}/round", json={"text": "More", "revision": rev(client, chat["id"])}
    )
    _refused(again.status_code, again.json())
    assert alice.sent() == 2
