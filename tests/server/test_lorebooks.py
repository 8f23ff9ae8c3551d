"""Lorebook endpoints: import, create, entries with every field, attach, export, bad input."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from taverna.server.context import AppContext
from tests.server.conftest import rev

SAMPLE = Path(__file__).resolve().parents[2] / "taverna" / "data" / "Brasswater.json"


def test_import_edit_entries_attach_export(client: TestClient) -> None:
    imported = client.post(
        "/api/lorebooks/import",
        files={"file": (SAMPLE.name, SAMPLE.read_bytes(), "application/json")},
    )
    assert imported.status_code == 201, imported.text
    book = imported.json()
    assert book["name"] == "Brasswater" and book["entry_count"] > 0
    full = client.get(f"/api/lorebooks/{book['id']}").json()
    entry = full["entries"][0]
    assert {"uid", "key", "content", "position", "selectiveLogic"} <= set(entry)
    changed = {
        **entry,
        "content": "新的内容",
        "key": ["harbour", "港口"],
        "constant": True,
        "probability": 50,
    }
    after = client.put(f"/api/lorebooks/{book['id']}/entries/{entry['uid']}", json=changed)
    assert after.status_code == 200, after.text
    saved = next(e for e in after.json()["entries"] if e["uid"] == entry["uid"])
    assert (saved["content"], saved["key"], saved["constant"], saved["probability"]) == (
        "新的内容",
        ["harbour", "港口"],
        True,
        50,
    )
    grown = client.post(f"/api/lorebooks/{book['id']}/entries")
    assert grown.status_code == 201
    assert len(grown.json()["entries"]) == len(full["entries"]) + 1
    new_uid = max(e["uid"] for e in grown.json()["entries"])
    shrunk = client.delete(f"/api/lorebooks/{book['id']}/entries/{new_uid}").json()
    assert len(shrunk["entries"]) == len(full["entries"])
    exported = client.get(f"/api/lorebooks/{book['id']}/export")
    assert json.loads(exported.content)["entries"][str(entry["uid"])]["content"] == "新的内容"
    # Attach to a character and to a chat.
    card = client.post("/api/characters", json={"name": "Ione"}).json()
    linked = client.put(
        f"/api/characters/{card['id']}/lorebook", json={"lorebook_id": book["id"]}
    ).json()
    assert (linked["lorebook_id"], linked["lorebook_name"]) == (book["id"], "Brasswater")
    chat = client.post("/api/chats", json={"character_id": card["id"]}).json()
    bound = client.put(
        f"/api/chats/{chat['id']}/lorebook",
        json={"lorebook_id": book["id"], "revision": rev(client, chat["id"])},
    ).json()
    assert bound["lorebook"] == "Brasswater"
    unbound = client.put(
        f"/api/chats/{chat['id']}/lorebook",
        json={"lorebook_id": None, "revision": rev(client, chat["id"])},
    ).json()
    assert unbound["lorebook"] is None


def test_create_and_delete(client: TestClient) -> None:
    created = client.post("/api/lorebooks", json={"name": "世界"})
    assert created.status_code == 201
    book = created.json()
    assert book["entries"] == []
    assert client.post("/api/lorebooks", json={"name": "世界"}).status_code == 409
    assert client.delete(f"/api/lorebooks/{book['id']}").status_code == 204
    assert client.get("/api/lorebooks").json() == []


def test_bad_input_changes_nothing(client: TestClient, ctx: AppContext) -> None:
    book = client.post("/api/lorebooks", json={"name": "B"}).json()
    book = client.post(f"/api/lorebooks/{book['id']}/entries").json()
    uid = book["entries"][0]["uid"]
    before = client.get(f"/api/lorebooks/{book['id']}").json()
    bad_entry = {**book["entries"][0], "key": "not a list"}
    assert (
        client.put(f"/api/lorebooks/{book['id']}/entries/{uid}", json=bad_entry).status_code == 422
    )
    assert client.put(f"/api/lorebooks/{book['id']}/entries/{uid}", json=[1, 2]).status_code == 422
    assert client.put(f"/api/lorebooks/{book['id']}/entries/999", json=bad_entry).status_code == 404
    assert client.put(f"/api/lorebooks/{book['id']}/entries/abc", json={}).status_code == 422
    assert client.get(f"/api/lorebooks/{book['id']}").json() == before
    assert (
        client.post(
            "/api/lorebooks/import",
            files={"file": ("x.json", b'{"name": "card", "first_mes": "hi"}', "application/json")},
        ).status_code
        == 422
    )
    assert (
        client.post(
            "/api/lorebooks/import", files={"file": ("x.json", b"{nope", "application/json")}
        ).status_code
        == 422
    )
    ctx.upload_limit = 10
    assert (
        client.post(
            "/api/lorebooks/import",
            files={"file": (SAMPLE.name, SAMPLE.read_bytes(), "application/json")},
        ).status_code
        == 413
    )
    assert [b["name"] for b in client.get("/api/lorebooks").json()] == ["B"]
    for url in ("/api/lorebooks/nope", "/api/lorebooks/nope/export"):
        assert client.get(url).status_code == 404
    assert client.post("/api/lorebooks", json={"name": ""}).status_code == 422
    assert (
        client.put("/api/characters/nope/lorebook", json={"lorebook_id": book["id"]}).status_code
        == 404
    )
