"""Importing a whole SillyTavern user data folder by upload, with progress events and a report."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from taverna.server.context import AppContext, open_context
from taverna.server.imports import ImportJob, ImportJobs
from taverna.services.house.scratch import ScratchFolder
from tests.support.api import events as task_events


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


def test_import_a_user_data_folder(client: TestClient, st_fixtures: Path) -> None:
    started = client.post("/api/import/sillytavern", files=folder_files(st_fixtures))
    assert started.status_code == 202, started.text
    events = task_events(client, started.json()["task"]["id"])
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
    assert task_events(client, started.json()["task"]["id"]) == events


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
    name, done = task_events(client, started.json()["task"]["id"])[-1]
    assert name == "done" and done["report"]["stored"] == []
    assert not Path("/tmp/evil/characters/x.json").exists()
    assert client.get("/api/tasks/nope/events").status_code == 404


def test_a_file_and_a_folder_of_the_same_name_is_422_naming_the_path(
    client: TestClient, ctx: AppContext
) -> None:
    for first, second in (
        ("user/characters", "user/characters/a.json"),
        ("user/characters/a.json", "user/characters"),
        ("user/characters/a.json", "user/characters/a.json"),
    ):
        files = [
            ("files", (first, b"{}", "application/json")),
            ("files", (second, b"{}", "application/json")),
        ]
        refused = client.post("/api/import/sillytavern", files=files)
        assert refused.status_code == 422, refused.text
        detail = refused.json()["detail"]
        assert detail["file"] == second and detail["field"] == "files"
        assert "same name" in detail["message"]
    # Nothing was kept: the upload's folder went with the refusal.
    assert list((ctx.data_dir / "tmp").iterdir()) == []


def test_the_upload_goes_to_the_data_folder_and_is_removed_after(
    client: TestClient, ctx: AppContext, st_fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Path] = []
    original = ImportJobs.start

    def noting(self: ImportJobs, folder: Path, *args: object, **kwargs: object) -> object:
        seen.append(folder)
        assert (folder / "default-user" / "characters" / "Seraphina.png").is_file()
        return original(self, folder, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ImportJobs, "start", noting)
    started = client.post("/api/import/sillytavern", files=folder_files(st_fixtures))
    assert started.status_code == 202
    assert task_events(client, started.json()["task"]["id"])[-1][0] == "done"
    assert seen and seen[0].parent == ctx.data_dir / "tmp"
    assert not seen[0].exists()
    assert list((ctx.data_dir / "tmp").iterdir()) == []


def test_a_body_cut_short_or_not_multipart_is_refused(client: TestClient, ctx: AppContext) -> None:
    boundary = "cut-here"
    body = (
        f"--{boundary}\r\n"
        'Content-Disposition: form-data; name="files"; filename="user/characters/a.json"\r\n\r\n'
        '{"name": "A"'
    ).encode()
    cut = client.post(
        "/api/import/sillytavern",
        content=body,
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    assert cut.status_code == 422 and "ended" in cut.json()["detail"]["message"]
    plain = client.post("/api/import/sillytavern", content=b"{}")
    assert plain.status_code == 400 and plain.json()["detail"]["field"] == "files"
    assert list((ctx.data_dir / "tmp").iterdir()) == []


def test_a_folder_left_by_a_killed_server_is_removed_at_the_next_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    # A process makes an upload folder, writes into it and is killed.
    script = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from taverna.services.house.scratch import ScratchFolder\n"
        "folder = ScratchFolder(Path(sys.argv[1]), 'import')\n"
        "(folder.path / 'half.png').write_bytes(b'x' * 1000)\n"
        "print(folder.path, flush=True)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(data)], capture_output=True, text=True, check=False
    )
    left = Path(done.stdout.strip())
    assert left.is_dir() and left.parent == data / "tmp"
    # This process's own upload folder, still in use, stays.
    mine = ScratchFolder(data, "import")
    ctx = open_context(data)
    try:
        assert not left.exists()
        assert mine.path.is_dir()
        assert sorted(p.name for p in (data / "tmp").iterdir()) == sorted(
            [mine.path.name, f"{mine.path.name}.lock"]
        )
    finally:
        ctx.close()
        mine.remove()
    assert list((data / "tmp").iterdir()) == []


def test_events_from_a_negative_index_are_refused_and_never_replayed_twice(
    client: TestClient,
) -> None:
    files = [("files", ("user/notes/readme.txt", b"hello", "text/plain"))]
    task_id = client.post("/api/import/sillytavern", files=files).json()["task"]["id"]
    events = task_events(client, task_id)
    assert events[-1][0] == "done"
    for since in ("-1", "-1000", "x"):
        refused = client.get(f"/api/tasks/{task_id}/events?since={since}")
        assert refused.status_code == 422, since
    # A resume from a bad Last-Event-ID starts from the first event, each sent once.
    with client.stream(
        "GET", f"/api/tasks/{task_id}/events", headers={"Last-Event-ID": "-5"}
    ) as response:
        ids = [line for line in response.iter_lines() if line.startswith("id: ")]
    assert ids == [f"id: {i}" for i in range(len(events))]


def test_following_from_before_the_first_event_starts_at_it() -> None:
    async def collect() -> list[int]:
        job = ImportJob("j")
        job.publish("progress", {})
        job.publish("done", {})
        return [index async for index, _, _ in job.follow(-1000)]

    assert asyncio.run(collect()) == [0, 1]
