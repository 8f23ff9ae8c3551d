"""A model downloaded through the model manager answers: the bundled GGUF file served by a
stand-in hub on 127.0.0.1, downloaded and checked, becomes a local connection whose test
is a real reply from llama.cpp."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from taverna.server.app import create_app
from taverna.server.context import open_context
from taverna.services.connections import local_models
from tests.stubs.hub_server import start_hub

BUNDLED = local_models.default_model_path()
pytestmark = pytest.mark.skipif(
    not (local_models.runtime_available() and BUNDLED), reason="needs taverna's `local` extra"
)
REPO = "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    ctx = open_context(tmp_path / "data")
    try:
        with TestClient(create_app(ctx)) as client:
            yield client
    finally:
        local_models.local_models().stop()
        ctx.close()


def test_a_downloaded_model_is_a_connection_that_answers(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert BUNDLED is not None
    data = BUNDLED.read_bytes()
    with start_hub({(REPO, BUNDLED.name): data}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
        body = {"repo": REPO, "file": BUNDLED.name, "connection": "Downloaded"}
        job = client.post("/api/models/downloads", json=body).json()
        ends = time.monotonic() + 120
        while job["state"] == "running" and time.monotonic() < ends:
            time.sleep(0.1)
            job = client.get(f"/api/models/jobs/{job['id']}").json()
    assert job["state"] == "done", job
    assert job["size"] == len(data) and job["checksum"].startswith("sha256:")
    tested = client.post("/api/connections/Downloaded/test").json()
    assert tested["ok"] is True, tested
    # the model process runs the file the models folder links to, in the hub client's cache
    folder = local_models.local_models().models_dir
    running = local_models.local_models().running()
    assert folder is not None and running is not None
    assert running.model == (folder / BUNDLED.name).resolve()
    assert (tmp_path / "hf-cache") in running.model.parents
