"""A new account's library starts as a new install's does: the product's presets and
templates (the preset in use), the sample character and lorebook; `empty` leaves it bare.
The other accounts' libraries are not touched."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from taverna.server.app import create_app
from taverna.server.context import AppContext, open_context
from taverna.services.connections import local_models
from taverna.services.library.service import LibraryKind
from tests.server.accounts_fixtures import enable_accounts, log_in

SECRET = "a long enough secret"


@pytest.fixture
def admin(ctx: AppContext) -> Iterator[TestClient]:
    enable_accounts(ctx, admin="root")
    with TestClient(create_app(ctx)) as client:
        log_in(client, "root")
        yield client


def _names(client: TestClient, route: str) -> list[str]:
    return sorted(item["name"] for item in client.get(route).json())


def test_an_account_the_admin_adds_starts_with_the_samples_and_presets(
    admin: TestClient,
) -> None:
    added = admin.post("/api/users", json={"name": "carol", "password": SECRET})
    assert added.status_code == 201, added.text
    carol = TestClient(admin.app)
    log_in(carol, "carol", SECRET)
    assert _names(carol, "/api/characters") == ["Ione Calder"]
    assert _names(carol, "/api/lorebooks") == ["Brasswater"]
    presets = carol.get("/api/presets").json()
    active = [p["name"] for p in presets if p["active"]]
    assert active == ["Taverna Default"], presets
    connections = [c["name"] for c in carol.get("/api/connections").json()]
    assert connections == (["Local model"] if local_models.available() else [])
    # A chat with the sample character can be started at once.
    card = carol.get("/api/characters").json()[0]
    chat = carol.post("/api/chats", json={"character_id": card["id"]})
    assert chat.status_code == 201, chat.text
    # The admin's own library got nothing from it.
    assert admin.get("/api/characters").json() == []


def test_an_empty_account_starts_bare(admin: TestClient) -> None:
    added = admin.post("/api/users", json={"name": "dave", "password": SECRET, "empty": True})
    assert added.status_code == 201, added.text
    dave = TestClient(admin.app)
    log_in(dave, "dave", SECRET)
    assert dave.get("/api/characters").json() == []
    assert dave.get("/api/lorebooks").json() == []


def test_the_command_line_adds_an_account_with_the_samples(tmp_path: Path) -> None:
    data = tmp_path / "data"
    taverna = str(Path(sys.executable).parent / "taverna")
    said = {}
    for name, extra in (("erin", []), ("fay", ["--empty"])):
        done = subprocess.run(
            [taverna, "user", "add", name, "--data", str(data), *extra],
            input=SECRET + "\n",
            text=True,
            capture_output=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        said[name] = done.stdout
    assert "Ione Calder" in said["erin"] and "Ione Calder" not in said["fay"]
    ctx = open_context(data)
    try:
        erin = ctx.accounts().get("erin").id
        fay = ctx.accounts().get("fay").id
        characters = LibraryKind.CHARACTER
        assert [d.name for d in ctx.library(erin).documents(characters)] == ["Ione Calder"]
        assert ctx.library(fay).documents(characters) == []
    finally:
        ctx.close()
