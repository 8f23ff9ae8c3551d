"""U+0000 through the API, on SQLite and PostgreSQL alike: names, titles, messages,
edits, imported cards, lorebook entries and a model's reply are stored and read back
as they were sent."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from taverna.server.context import AppContext, open_context
from taverna.services.house.data import DATABASE_URL_ENV as STORE_URL_ENV
from taverna.store.testing import DATABASE_URL_ENV, backends
from tests.stubs.model_server import Reply, StubServer
from tests.support.api import connect, events
from tests.support.folders import own_schema

NUL = "\x00"


@pytest.fixture(params=backends())
def ctx(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[AppContext]:
    """A server's context over SQLite, or over PostgreSQL in a schema of its own."""
    if request.param == "sqlite":
        yield open_context(tmp_path / "data")
        return
    with own_schema(os.environ[DATABASE_URL_ENV]) as url:
        monkeypatch.setenv(STORE_URL_ENV, url)
        yield open_context(tmp_path / "data")


def _ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def test_names_titles_messages_and_edits_keep_nul(client: TestClient, stub: StubServer) -> None:
    connect(client, stub)
    card = _ok(
        client.post(
            "/api/characters",
            json={"name": f"Ann{NUL}ie", "description": f"A{NUL}B", "first_mes": f"Hi{NUL}."},
        ),
        201,
    )
    assert card["name"] == f"Ann{NUL}ie" and card["description"] == f"A{NUL}B"
    assert _ok(client.get(f"/api/characters/{card['id']}"))["name"] == f"Ann{NUL}ie"
    chat = _ok(client.post("/api/chats", json={"character_id": card["id"]}), 201)
    renamed = _ok(
        client.patch(
            f"/api/chats/{chat['id']}",
            json={"title": f"Tea{NUL}time", "revision": chat["revision"]},
        )
    )
    assert renamed["title"] == f"Tea{NUL}time"
    assert [c["title"] for c in _ok(client.get("/api/chats"))] == [f"Tea{NUL}time"]
    # A message with U+0000, and a model reply with one.
    stub.script(Reply(tokens=["Half", f"{NUL}way", "."]))
    started = _ok(
        client.post(
            f"/api/chats/{chat['id']}/generate",
            json={"kind": "normal", "text": f"Hello{NUL}there", "revision": renamed["revision"]},
        ),
        202,
    )
    ended = events(client, started["task"]["id"])[-1]
    assert ended[0] == "done", ended[1]["message"]
    view = _ok(client.get(f"/api/chats/{chat['id']}"))
    contents = [m["content"] for m in view["messages"]]
    assert contents == [f"Hi{NUL}.", f"Hello{NUL}there", f"Half{NUL}way."]
    assert view["messages"][-1]["name"] == f"Ann{NUL}ie"
    sent = stub.requests[-1].body["messages"]
    assert any(m["content"] == f"Hello{NUL}there" for m in sent)
    # An edit.
    reply = view["messages"][-1]
    edited = _ok(
        client.patch(
            f"/api/chats/{chat['id']}/messages/{reply['id']}",
            json={"content": f"Edited{NUL}{NUL}", "revision": view["revision"]},
        )
    )
    assert edited["messages"][-1]["content"] == f"Edited{NUL}{NUL}"
    assert _ok(client.get(f"/api/chats/{chat['id']}"))["messages"][-1]["content"] == (
        f"Edited{NUL}{NUL}"
    )


def test_imported_cards_and_lorebook_entries_keep_nul(client: TestClient) -> None:
    card = {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {
            "name": f"Card{NUL}name",
            "description": f"Line{NUL}one",
            "personality": "",
            "scenario": "",
            "first_mes": f"Hello{NUL}!",
            "mes_example": "",
            "extensions": {f"key{NUL}": f"value{NUL}"},
        },
    }
    raw = json.dumps(card).encode()
    imported = _ok(
        client.post(
            "/api/characters/import", files={"file": ("card.json", raw, "application/json")}
        ),
        201,
    )
    again = _ok(client.get(f"/api/characters/{imported['id']}"))
    assert (again["name"], again["description"], again["first_mes"]) == (
        f"Card{NUL}name",
        f"Line{NUL}one",
        f"Hello{NUL}!",
    )
    exported = json.loads(
        client.get(f"/api/characters/{imported['id']}/export?format=json").content
    )
    assert exported["data"]["extensions"][f"key{NUL}"] == f"value{NUL}"
    book = _ok(client.post("/api/lorebooks", json={"name": f"Book{NUL}"}), 201)
    grown = _ok(client.post(f"/api/lorebooks/{book['id']}/entries"), 201)
    entry = grown["entries"][-1]
    changed = {**entry, "content": f"Lore{NUL}text", "key": [f"key{NUL}"], "comment": NUL}
    saved = _ok(client.put(f"/api/lorebooks/{book['id']}/entries/{entry['uid']}", json=changed))
    stored = next(e for e in saved["entries"] if e["uid"] == entry["uid"])
    assert (stored["content"], stored["key"], stored["comment"]) == (
        f"Lore{NUL}text",
        [f"key{NUL}"],
        NUL,
    )
    read = _ok(client.get(f"/api/lorebooks/{book['id']}"))
    assert read["name"] == f"Book{NUL}"
    assert next(e for e in read["entries"] if e["uid"] == entry["uid"])["content"] == (
        f"Lore{NUL}text"
    )
