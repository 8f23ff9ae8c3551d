"""Quick Reply sets over the API: create, edit, activate globally and per chat, delete."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from taverna.server.context import AppContext
from tests.server.conftest import rev
from tests.server.test_chats import make_chat


def test_sets_are_created_edited_and_offered_to_chats(client: TestClient, ctx: AppContext) -> None:
    chat_id, _ids = make_chat(ctx)
    made = client.put(
        "/api/quick-replies",
        json={
            "name": "Mood",
            "active": True,
            "replies": [
                {"label": "Calm", "message": "/setvar key=mood calm"},
                {"label": "Auto", "message": "/incvar turns", "hidden": True, "triggers": ["user"]},
            ],
        },
    )
    assert made.status_code == 200, made.text
    data = made.json()
    assert data["active"] is True
    assert [(r["id"], r["label"], r["triggers"]) for r in data["replies"]] == [
        (1, "Calm", []),
        (2, "Auto", ["user"]),
    ]
    offered = client.get(f"/api/chats/{chat_id}/quick-replies").json()
    assert [(r["set"], r["label"], r["hidden"]) for r in offered["replies"]] == [
        ("Mood", "Calm", False),
        ("Mood", "Auto", True),
    ]
    # Editing keeps the ids by position and numbers new replies after the highest.
    edited = client.put(
        "/api/quick-replies",
        json={
            "name": "Mood",
            "replies": [{"label": "Calm!", "message": "/pass"}, {"label": "B"}, {"label": "C"}],
        },
    ).json()
    assert [(r["id"], r["label"]) for r in edited["replies"]] == [(1, "Calm!"), (2, "B"), (3, "C")]
    assert edited["active"] is True


def test_a_chat_set_is_offered_in_that_chat_only(client: TestClient, ctx: AppContext) -> None:
    chat_id, _ids = make_chat(ctx)
    other_id, _ = make_chat(ctx)
    client.put(
        "/api/quick-replies",
        json={"name": "Local", "replies": [{"label": "Go", "message": "/pass"}]},
    )
    answer = client.put(
        f"/api/chats/{chat_id}/quick-replies",
        json={"sets": ["Local"], "revision": rev(client, chat_id)},
    ).json()
    assert answer["chat_sets"] == ["Local"]
    assert [r["label"] for r in answer["replies"]] == ["Go"]
    assert client.get(f"/api/chats/{other_id}/quick-replies").json()["replies"] == []
    assert (
        client.put(
            f"/api/chats/{chat_id}/quick-replies",
            json={"sets": ["Nope"], "revision": rev(client, chat_id)},
        ).status_code
        == 404
    )


def test_global_list_and_delete(client: TestClient, ctx: AppContext) -> None:
    first = client.put("/api/quick-replies", json={"name": "A", "replies": []}).json()
    client.put("/api/quick-replies", json={"name": "B", "replies": []})
    assert client.put("/api/quick-replies-active", json={"sets": ["B", "A"]}).json() == ["B", "A"]
    assert client.delete(f"/api/quick-replies/{first['id']}").status_code == 204
    sets = client.get("/api/quick-replies").json()
    assert [(s["name"], s["active"]) for s in sets] == [("B", True)]


def test_a_sillytavern_set_imports_runs_and_exports_unchanged(
    client: TestClient, ctx: AppContext, st_fixtures: Path
) -> None:
    path = st_fixtures / "handmade" / "user-data" / "QuickReplies" / "Glade Tools.json"
    if not path.exists():
        pytest.skip("the Glade Tools Quick Reply set is not among the fixtures")
    answer = client.post(
        "/api/quick-replies/import",
        files={"file": (path.name, path.read_bytes(), "application/json")},
    )
    assert answer.status_code == 201, answer.text
    stored = answer.json()
    assert stored["name"] == "Glade Tools" and stored["replies"][0]["label"] == "Look around"
    exported = client.get(f"/api/quick-replies/{stored['id']}/export")
    assert exported.content == path.read_bytes()
    # Its scripts run in a chat: the roll is stored and echoed.
    chat_id, _ids = make_chat(ctx)
    client.put(
        f"/api/chats/{chat_id}/quick-replies",
        json={"sets": ["Glade Tools"], "revision": rev(client, chat_id)},
    )
    roll = next(
        r
        for r in client.get(f"/api/chats/{chat_id}/quick-replies").json()["replies"]
        if r["label"] == "Roll"
    )
    ran = client.post(
        f"/api/chats/{chat_id}/script",
        json={"text": roll["message"], "revision": rev(client, chat_id)},
    ).json()
    rolled = int(ran["notices"][0]["text"].rsplit(" ", 1)[1])
    assert 1 <= rolled <= 20 and ran["notices"][-1]["text"] == f"Rolled {rolled}"


def test_a_legacy_set_imports_migrated(client: TestClient, st_fixtures: Path) -> None:
    path = st_fixtures / "presets" / "quick-replies" / "Default.json"
    if not path.exists():
        pytest.skip("SillyTavern's Default Quick Reply preset is not among the fixtures")
    stored = client.post(
        "/api/quick-replies/import",
        files={"file": (path.name, path.read_bytes(), "application/json")},
    ).json()
    assert stored["name"] == "Default"
    assert [r["id"] for r in stored["replies"]][:2] == [1, 2]
    assert stored["replies"][0]["message"] == "/?"


def test_a_file_that_is_not_a_set_is_refused(client: TestClient) -> None:
    answer = client.post(
        "/api/quick-replies/import",
        files={"file": ("x.json", b'{"name": "x"}', "application/json")},
    )
    assert answer.status_code == 422
    assert "x.json" in answer.text
