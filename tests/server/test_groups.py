"""Groups over HTTP: make one, start its chat, a round of two speakers streams in order,
another member writes a candidate, mute, export."""

from __future__ import annotations

import json
import time

import pytest
from fastapi.testclient import TestClient

from tests.server.conftest import rev
from tests.stubs.model_server import Reply, StubServer
from tests.support.api import connect, events


@pytest.fixture
def group(client: TestClient, stub: StubServer) -> dict:  # type: ignore[type-arg]
    connect(client, stub)
    ids = []
    for name, description in (("Mira", "A keeper."), ("Élodie", "A pilot."), ("小雪", "画家。")):
        card = {"name": name, "description": description, "first_mes": f"{name} waves."}
        ids.append(client.post("/api/characters", json=card).json()["id"])
    made = client.post(
        "/api/groups",
        json={"name": "Harbour", "character_ids": ids, "activation_strategy": "list"},
    )
    assert made.status_code == 201, made.text
    return made.json()  # type: ignore[no-any-return]


def _round_done(client: TestClient, round_id: str) -> dict:  # type: ignore[type-arg]
    for _ in range(200):
        found = client.get(f"/api/rounds/{round_id}").json()
        if found["done"]:
            return found  # type: ignore[no-any-return]
        time.sleep(0.02)
    raise AssertionError("the round did not end")


def test_a_group_round_streams_its_speakers_in_order(
    client: TestClient,
    stub: StubServer,
    group: dict,  # type: ignore[type-arg]
) -> None:
    assert [m["name"] for m in group["members"]] == ["Mira", "Élodie", "小雪"]
    muted = client.patch(
        f"/api/groups/{group['id']}", json={"muted": ["小雪"], "revision": group["revision"]}
    )
    assert muted.status_code == 200, muted.text
    assert [m["muted"] for m in muted.json()["members"]] == [False, False, True]
    chat = client.post(f"/api/groups/{group['id']}/chats", json={}).json()
    assert chat["group_id"] == group["id"]
    shown = client.get(f"/api/chats/{chat['id']}").json()
    assert [(m["name"], m["content"]) for m in shown["messages"]] == [
        ("Mira", "Mira waves."),
        ("Élodie", "Élodie waves."),
    ]
    stub.script(Reply(tokens=["Mira ", "speaks."]), Reply(tokens=["Élodie ", "speaks."]))
    started = client.post(
        f"/api/chats/{chat['id']}/round",
        json={"text": "Hello", "revision": rev(client, chat["id"])},
    )
    assert started.status_code == 202, started.text
    body = started.json()
    assert body["round"]["speakers"] == ["Mira", "Élodie"]
    first = events(client, body["task"]["id"])
    assert first[-1][0] == "done" and "".join(d["text"] for n, d in first if n == "delta") == (
        "Mira speaks."
    )
    found = _round_done(client, body["round"]["id"])
    assert len(found["tasks"]) == 2
    assert events(client, found["tasks"][1]["id"])[-1][1]["text"] == "Élodie speaks."
    shown = client.get(f"/api/chats/{chat['id']}").json()
    assert [(m["name"], m["content"]) for m in shown["messages"]][2:] == [
        ("User", "Hello"),
        ("Mira", "Mira speaks."),
        ("Élodie", "Élodie speaks."),
    ]
    assert all(m["avatar_url"] for m in shown["messages"] if m["role"] == "assistant")

    # Mira writes a candidate in place of Élodie's reply
    stub.script(Reply(tokens=["Mira again."]))
    swiped = client.post(
        f"/api/chats/{chat['id']}/generate",
        json={"kind": "swipe", "member": "Mira", "revision": rev(client, chat["id"])},
    )
    assert swiped.status_code == 202, swiped.text
    assert events(client, swiped.json()["task"]["id"])[-1][0] == "done"
    last = client.get(f"/api/chats/{chat['id']}").json()["messages"][-1]
    assert (last["name"], last["content"], last["candidate_count"]) == ("Mira", "Mira again.", 2)


def test_a_group_exports_as_sillytavern_writes_it(
    client: TestClient,
    group: dict,  # type: ignore[type-arg]
) -> None:
    exported = client.get(f"/api/groups/{group['id']}/export")
    assert exported.status_code == 200
    data = json.loads(exported.content)
    assert data["members"] == ["Mira.png", "Élodie.png", "小雪.png"]
    assert data["activation_strategy"] == 1 and data["disabled_members"] == []


def test_unknown_group_and_member(client: TestClient, group: dict) -> None:  # type: ignore[type-arg]
    assert client.get("/api/groups/nope").status_code == 404
    chat = client.post(f"/api/groups/{group['id']}/chats", json={}).json()
    bad = client.post(
        f"/api/chats/{chat['id']}/round",
        json={"member": "Nobody", "revision": rev(client, chat["id"])},
    )
    assert bad.status_code == 404 and bad.json()["detail"]["field"] == "member"


def test_a_member_gets_a_connection_of_its_own(client: TestClient, group: dict) -> None:  # type: ignore[type-arg]
    url = f"/api/groups/{group['id']}"
    missing = client.patch(
        url, json={"connections": {"Mira": "nope"}, "revision": group["revision"]}
    )
    assert missing.status_code == 404
    no_preset = client.patch(url, json={"presets": {"Mira": "nope"}, "revision": group["revision"]})
    assert no_preset.status_code == 404 and no_preset.json()["detail"]["field"] == "presets"
    unchanged = client.get(url).json()
    assert unchanged["revision"] == group["revision"]  # nothing was written
    changed = client.patch(
        url, json={"connections": {"小雪": "stub"}, "revision": group["revision"]}
    ).json()
    assert [m["connection"] for m in changed["members"]] == [None, None, "stub"]
    back = client.patch(url, json={"connections": {"小雪": None}, "revision": changed["revision"]})
    assert [m["connection"] for m in back.json()["members"]] == [None, None, None]
    assert "taverna" not in json.loads(client.get(f"{url}/export").content)


def test_edit_and_resend_in_a_group_is_answered_by_a_round(
    client: TestClient,
    stub: StubServer,
    group: dict,  # type: ignore[type-arg]
) -> None:
    chat = client.post(f"/api/groups/{group['id']}/chats", json={}).json()
    stub.script(*[Reply(tokens=[f"first {i}"]) for i in range(3)])
    body = client.post(
        f"/api/chats/{chat['id']}/round", json={"text": "Hi", "revision": rev(client, chat["id"])}
    ).json()
    _round_done(client, body["round"]["id"])
    shown = client.get(f"/api/chats/{chat['id']}").json()["messages"]
    question = next(m for m in shown if m["role"] == "user")
    stub.script(*[Reply(tokens=[f"again {i}"]) for i in range(3)])
    resent = client.post(
        f"/api/chats/{chat['id']}/messages/{question['id']}/resend",
        json={"content": "Hello again", "revision": rev(client, chat["id"])},
    )
    assert resent.status_code == 202, resent.text
    found = resent.json()["round"]
    assert found["speakers"] == ["Mira", "Élodie", "小雪"]
    _round_done(client, found["id"])
    shown = client.get(f"/api/chats/{chat['id']}").json()["messages"]
    assert [(m["name"], m["content"]) for m in shown][3:] == [
        ("User", "Hello again"),
        ("Mira", "again 0"),
        ("Élodie", "again 1"),
        ("小雪", "again 2"),
    ]


def test_scripts_change_the_members_of_a_group_chat(client: TestClient, group: dict) -> None:  # type: ignore[type-arg]
    chat = client.post(f"/api/groups/{group['id']}/chats", json={}).json()
    extra = client.post("/api/characters", json={"name": "Oskar", "first_mes": "Hi."}).json()

    def run(text: str) -> dict:  # type: ignore[type-arg]
        answer = client.post(
            f"/api/chats/{chat['id']}/script",
            json={"text": text, "revision": rev(client, chat["id"])},
        )
        assert answer.status_code == 200, answer.text
        return answer.json()  # type: ignore[no-any-return]

    def members() -> list[tuple[str, bool]]:
        found = client.get(f"/api/groups/{group['id']}").json()["members"]
        return [(m["name"], m["muted"]) for m in found]

    run("/member-disable Élodie | /member-add Oskar | /member-up Oskar")
    assert members() == [("Mira", False), ("Élodie", True), ("Oskar", False), ("小雪", False)]
    run("/member-enable 1 | /member-remove 小雪 | /member-down Mira")
    assert members() == [("Élodie", False), ("Mira", False), ("Oskar", False)]
    missing = client.post(
        f"/api/chats/{chat['id']}/script",
        json={"text": "/member-remove Nobody", "revision": rev(client, chat["id"])},
    )
    assert missing.status_code == 400 and "no member 'Nobody'" in missing.text
    assert extra["name"] == "Oskar"
