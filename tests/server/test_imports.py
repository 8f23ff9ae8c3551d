"""Importing a whole SillyTavern user data folder by upload, with progress events and a report."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from taverna.server.context import AppContext


def folder_files(st_fixtures: Path) -> list[tuple[str, tuple[str, bytes, str]]]:
    """The fixture user folder as a browser sends it: each file named by its path."""
    root = st_fixtures / "handmade" / "user-data"
    files = [
        (
            "files",
            (
                f"default-user/{p.relative_to(root).as_posix()}",
                p.read_bytes(),
                "application/octet-stream",
            ),
        )
        for p in sorted(root.rglob("*"))
        if p.is_file()
    ]
    card = st_fixtures / "content" / "default_Seraphina.png"
    files.append(
        ("files", ("default-user/characters/Seraphina.png", card.read_bytes(), "image/png"))
    )
    files.append(("files", ("default-user/notes/readme.txt", b"hello", "text/plain")))
    return files


def follow(client: TestClient, task_id: str) -> list[tuple[str, dict]]:  # type: ignore[type-arg]
    out = []
    with client.stream("GET", f"/api/tasks/{task_id}/events") as response:
        name = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: ") and name:
                out.append((name, json.loads(line[6:])))
                if name in ("done", "error"):
                    break
    return out


def test_import_a_user_data_folder(client: TestClient, st_fixtures: Path) -> None:
    started = client.post("/api/import/sillytavern", files=folder_files(st_fixtures))
    assert started.status_code == 202, started.text
    events = follow(client, started.json()["task"]["id"])
    assert any(name == "progress" for name, _ in events)
    name, done = events[-1]
    assert name == "done", done
    report = done["report"]
    kinds = {item["kind"] for item in report["stored"]}
    assert {"character", "lorebook", "chat"} <= kinds
    assert any(s["path"].startswith("notes") for s in report["skipped"])
    assert [c["name"] for c in client.get("/api/characters").json()] == ["Seraphina"]
    assert any(b["name"] == "Glade Lore" for b in client.get("/api/lorebooks").json())
    chats = client.get("/api/chats").json()
    seraphina = [c for c in chats if "Seraphina" in c["character_names"]]
    assert seraphina and seraphina[0]["branch_count"] >= 1
    # Following again after the end replays the same events.
    assert follow(client, started.json()["task"]["id"]) == events


def test_import_bad_input_stores_nothing(
    client: TestClient, ctx: AppContext, st_fixtures: Path
) -> None:
    assert client.post("/api/import/sillytavern", data={"x": "1"}).status_code == 400
    ctx.folder_upload_limit = 1000
    too_big = client.post("/api/import/sillytavern", files=folder_files(st_fixtures))
    assert too_big.status_code == 413
    assert client.get("/api/characters").json() == [] and client.get("/api/chats").json() == []
    ctx.folder_upload_limit = 10**9
    # Names cannot climb out of the upload folder.
    sneaky = [("files", ("../../../../tmp/evil/characters/x.json", b"{}", "application/json"))]
    started = client.post("/api/import/sillytavern", files=sneaky)
    assert started.status_code == 202
    name, done = follow(client, started.json()["task"]["id"])[-1]
    assert name == "done" and done["report"]["stored"] == []
    assert not Path("/tmp/evil/characters/x.json").exists()
    assert client.get("/api/tasks/nope/events").status_code == 404
