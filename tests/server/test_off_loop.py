"""Uploads and imports parse and store off the event loop: the server answers other requests
while one runs. Checked by order, not by time: the upload's store write waits until a
health check has been answered, which can only happen if the loop is free meanwhile."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from taverna.formats.png_card import default_avatar
from taverna.server.context import AppContext


class StoreGate:
    """The store, except that its first document write waits (up to `patience` seconds)
    for `answered`, and notes whether it came."""

    def __init__(self, store: Any, patience: float = 5.0) -> None:
        self._store = store
        self.patience = patience
        self.entered = threading.Event()
        self.answered = threading.Event()
        self.overlapped: bool | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def put_document(self, *args: Any, **kwargs: Any) -> Any:
        if self.overlapped is None:
            self.entered.set()
            self.overlapped = self.answered.wait(self.patience)
        return self._store.put_document(*args, **kwargs)


def big_lorebook(entries: int = 10_000) -> bytes:
    book = {
        "entries": {
            str(i): {
                "uid": i,
                "key": [f"key{i}", f"other{i}"],
                "keysecondary": [],
                "comment": f"entry {i}",
                "content": f"Entry {i} tells of the harbour and the tide. " * 4,
                "constant": False,
                "selective": True,
                "order": 100,
                "position": 0,
                "disable": False,
            }
            for i in range(entries)
        }
    }
    return json.dumps(book).encode()


def upload_cases(
    client: TestClient, st_fixtures: Path
) -> dict[str, tuple[str, tuple[str, bytes, str]]]:
    card = client.post("/api/characters", json={"name": "Wren"}).json()
    persona = client.post("/api/personas", json={"name": "Tam"}).json()
    preset = (st_fixtures / "presets" / "openai" / "Default.json").read_bytes()
    card_json = json.dumps({"name": "Aster", "first_mes": "Hello."}).encode()
    return {
        "lorebook": ("/api/lorebooks/import", ("big.json", big_lorebook(), "application/json")),
        "card": ("/api/characters/import", ("aster.json", card_json, "application/json")),
        "character picture": (
            f"/api/characters/{card['id']}/avatar",
            ("p.png", default_avatar(), "image/png"),
        ),
        "persona picture": (
            f"/api/personas/{persona['id']}/avatar",
            ("p.png", default_avatar(), "image/png"),
        ),
        "preset": ("/api/presets/import?kind=chat", ("Default.json", preset, "application/json")),
    }


@pytest.mark.parametrize(
    "case", ["lorebook", "card", "character picture", "persona picture", "preset"]
)
def test_the_server_answers_while_an_upload_is_stored(
    client: TestClient,
    ctx: AppContext,
    st_fixtures: Path,
    monkeypatch: pytest.MonkeyPatch,
    case: str,
) -> None:
    path, file = upload_cases(client, st_fixtures)[case]
    gate = StoreGate(ctx.store)
    monkeypatch.setattr(ctx, "store", gate)
    answers: dict[str, httpx.Response] = {}
    uploading = threading.Thread(
        target=lambda: answers.update(upload=client.post(path, files={"file": file}))
    )
    uploading.start()
    try:
        assert gate.entered.wait(60), "the upload never reached the store"
        health = client.get("/api/health")
        gate.answered.set()
    finally:
        gate.answered.set()
        uploading.join(60)
    assert health.status_code == 200
    # The health check was answered while the upload's store write was waiting for it.
    assert gate.overlapped is True, f"{case}: the health check waited for the upload"
    assert answers["upload"].status_code in (200, 201), answers["upload"].text


def test_the_server_answers_while_a_folder_upload_is_written(
    client: TestClient, ctx: AppContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder's files are written by the worker thread, piece by piece."""
    from taverna.server import folder_upload

    entered, answered = threading.Event(), threading.Event()
    overlapped: list[bool] = []
    original = folder_upload.FolderWriter.write

    def gated(self: folder_upload.FolderWriter, data: bytes) -> None:
        if not overlapped:
            entered.set()
            overlapped.append(answered.wait(5))
        original(self, data)

    monkeypatch.setattr(folder_upload.FolderWriter, "write", gated)
    files = [("files", ("user/worlds/big.json", big_lorebook(1000), "application/json"))]
    answers: dict[str, httpx.Response] = {}
    uploading = threading.Thread(
        target=lambda: answers.update(upload=client.post("/api/import/sillytavern", files=files))
    )
    uploading.start()
    try:
        assert entered.wait(60)
        health = client.get("/api/health")
        answered.set()
    finally:
        answered.set()
        uploading.join(60)
    assert health.status_code == 200
    assert overlapped == [True]
    assert answers["upload"].status_code == 202, answers["upload"].text
