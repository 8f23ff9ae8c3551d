"""Ollama as a connection type of its own, against a stand-in that speaks Ollama's native
API: its models listed (`/api/tags`), a model pulled with its progress (`/api/pull`),
and a turn streamed through `/api/generate` with the prompt as written."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.stubs.ollama_server import Ollama, start_ollama
from tests.support.api import events, generate, start_chat
from tests.support.cli import run


@pytest.fixture
def ollama() -> Iterator[Ollama]:
    with start_ollama() as stub:
        yield stub


def _job(client: TestClient, started: Any) -> dict[str, Any]:
    assert started.status_code == 202, started.text
    job = started.json()
    ends = time.monotonic() + 30
    while job["state"] == "running" and time.monotonic() < ends:
        time.sleep(0.05)
        job = client.get(f"/api/models/jobs/{job['id']}").json()
    return dict(job)


def test_models_listed_pulled_with_progress_and_a_turn_streamed(
    client: TestClient, ollama: Ollama
) -> None:
    made = client.post(
        "/api/connections", json={"name": "Ollama", "api": "ollama", "url": ollama.url}
    )
    assert made.status_code == 201, made.text
    assert made.json()["api"] == "ollama" and made.json()["model"] == ""
    assert client.get("/api/connections/Ollama/models").json() == ["llama3.2:1b"]

    pulled = _job(
        client,
        client.post("/api/models/pulls", json={"connection": "Ollama", "model": "tinyllama"}),
    )
    assert pulled["state"] == "done", pulled
    assert pulled["status"] == "success" and pulled["done"] == pulled["total"] == 6300
    assert ("/api/pull", {"model": "tinyllama", "stream": True}) in ollama.bodies
    assert "tinyllama:latest" in client.get("/api/connections/Ollama/models").json()
    # the connection named no model: it takes the one pulled
    ours = next(c for c in client.get("/api/connections").json() if c["name"] == "Ollama")
    assert ours["model"] == "tinyllama"

    failed = _job(
        client, client.post("/api/models/pulls", json={"connection": "Ollama", "model": "nothing"})
    )
    assert failed["state"] == "failed" and failed["code"] == "ollama_pull_failed"
    assert "file does not exist" in failed["error"]

    client.patch("/api/connections/Ollama", json={"model": "llama3.2:1b"})
    assert client.post("/api/connections/Ollama/test").json()["ok"] is True
    chat_id = start_chat(client, name="Wren", description="Wren keeps the ferry log.")
    started = generate(client, chat_id, kind="normal", text="Is the ferry running?")
    seen = events(client, started["task"]["id"])
    assert "".join(d["text"] for name, d in seen if name == "delta") == "Hello, traveller."
    assert seen[-1][0] == "done"
    path, body = ollama.bodies[-1]
    assert path == "/api/generate"
    assert body["model"] == "llama3.2:1b" and body["raw"] is True and body["keep_alive"] == -1
    assert "Is the ferry running?" in body["prompt"] and body["stream"] is True
    assert isinstance(body["options"]["stop"], list) and body["options"]["num_predict"] > 0


def test_a_model_ollama_has_not_pulled_is_said(client: TestClient, ollama: Ollama) -> None:
    body = {"name": "Ollama", "api": "ollama", "url": ollama.url, "model": "absent:7b"}
    client.post("/api/connections", json=body)
    tested = client.post("/api/connections/Ollama/test").json()
    assert tested["ok"] is False and "absent:7b" in tested["message"]


def test_the_command_line_pulls_into_ollama(tmp_path: Path, ollama: Ollama) -> None:
    data = str(tmp_path / "data")
    run("connection", "add", "Ollama", "--api", "ollama", "--url", ollama.url, "--data", data)
    said = run("model", "pull", "qwen2.5:0.5b", "--connection", "Ollama", "--data", data)
    assert "qwen2.5:0.5b: success" in said
    assert "qwen2.5:0.5b" in ollama.models
