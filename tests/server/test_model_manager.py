"""The model manager against a stand-in hub on 127.0.0.1 that speaks the hub's file
protocol: a GGUF file downloaded with its progress, resumed by a Range request after the
connection broke, refused when its checksum does not match, and made a local connection;
the recommended models by memory and cores; the command line's download."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from taverna.server.context import AppContext
from taverna.services.connections.local_models import local_models
from taverna.services.connections.recommended_models import GIB, Machine, recommended
from tests.server.accounts_fixtures import enable_accounts, log_in
from tests.stubs.hub_server import Hub, start_hub, tiny_gguf
from tests.support.cli import run

REPO, FILE = "someone/Tiny-Instruct-GGUF", "tiny-instruct-q4_k_m.gguf"
SMALL = tiny_gguf("Tiny Instruct")


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Hub]:
    """The stand-in hub as $HF_ENDPOINT, the hub client's cache in the test's folder."""
    with start_hub({(REPO, FILE): SMALL}) as stub:
        monkeypatch.setenv("HF_ENDPOINT", stub.url)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
        yield stub


def _finished(client: TestClient, job: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
    ends = time.monotonic() + timeout
    seen = []
    while time.monotonic() < ends:
        job = client.get(f"/api/models/jobs/{job['id']}").json()
        seen.append(job)
        if job["state"] != "running":
            return job
        time.sleep(0.05)
    raise AssertionError(f"the download did not end: {seen[-1]}")


def _download(client: TestClient, **body: Any) -> dict[str, Any]:
    started = client.post("/api/models/downloads", json={"repo": REPO, "file": FILE, **body})
    assert started.status_code == 202, started.text
    return _finished(client, started.json())


def test_a_download_becomes_a_local_connection(client: TestClient, hub: Hub) -> None:
    job = _download(client, connection="Tiny")
    assert job["state"] == "done", job
    assert job["done"] == job["total"] == len(SMALL)
    assert job["model"] == FILE and job["connection"] == "Tiny"
    assert job["checksum"].startswith("sha256:")
    folder = local_models().models_dir
    assert folder is not None and (folder / FILE).read_bytes() == SMALL
    made = next(c for c in client.get("/api/connections").json() if c["name"] == "Tiny")
    assert made["api"] == "local" and made["model"] == FILE
    assert FILE in client.get("/api/connections/local-models").json()
    assert FILE in client.get("/api/models").json()["downloaded"]
    # the hub was asked for the file's headers, then the file, at the revision named
    asked_for = [r["method"] for r in hub.requests if "/resolve/main/" in r["path"]]
    assert asked_for[0] == "HEAD" and asked_for.count("GET") == 1
    # a second download of the same file is read from the client's cache
    asked = len(hub.gets())
    again = _download(client, connection="Tiny again")
    assert again["state"] == "done" and len(hub.gets()) == asked


def test_a_broken_download_resumes_where_it_stopped(
    client: TestClient, hub: Hub, tmp_path: Path
) -> None:
    # big enough that the client has written a piece to disk when the connection breaks
    big = tiny_gguf("Big", padding=24 << 20)
    hub.files[(REPO, "big.gguf")] = big
    hub.cut_next = 1
    job = _download(client, file="big.gguf")
    assert job["state"] == "done", job
    gets = [r for r in hub.gets() if r["path"].endswith("/big.gguf")]
    assert len(gets) == 2 and gets[0]["range"] == ""
    start = int(gets[1]["range"].removeprefix("bytes=").removesuffix("-"))
    assert 0 < start < len(big)
    folder = local_models().models_dir
    assert folder is not None and (folder / "big.gguf").read_bytes() == big


def test_a_file_that_does_not_match_its_checksum_is_refused(
    client: TestClient, hub: Hub, tmp_path: Path
) -> None:
    hub.corrupt = True
    job = _download(client, connection="Bad")
    assert job["state"] == "failed" and job["code"] == "hub_checksum_mismatch", job
    assert "sha256:" in job["error"] and "deleted" in job["error"]
    folder = local_models().models_dir
    assert folder is None or not (folder / FILE).exists()
    assert "Bad" not in [c["name"] for c in client.get("/api/connections").json()]
    cached = (tmp_path / "hf-cache").rglob("*")
    assert not [p for p in cached if p.is_symlink() or (p.parent.name == "blobs" and p.is_file())]
    # the hub serves the right bytes again: the next download is whole
    hub.corrupt = False
    assert _download(client, connection="Good")["state"] == "done"


def test_a_missing_repository_or_file_is_said(client: TestClient, hub: Hub) -> None:
    gone = _download(client, repo="nobody/nothing-GGUF")
    assert (gone["state"], gone["code"]) == ("failed", "hub_repo_not_found")
    missing = _download(client, file="other.gguf")
    assert (missing["state"], missing["code"]) == ("failed", "hub_file_not_found")
    refused = client.post("/api/models/downloads", json={"repo": REPO, "file": "notes.txt"})
    assert refused.status_code == 422 and "hub_file_not_gguf" in refused.text
    refused = client.post("/api/models/downloads", json={"repo": "../x", "file": FILE})
    assert refused.status_code == 422


def test_the_recommended_models_follow_memory_and_cores() -> None:
    small = recommended(Machine(2 * GIB, 2))
    fitting = [m["name"] for m in small if m["fits"]]
    assert fitting[:2] == ["SmolLM2-360M-Instruct", "Qwen2.5-0.5B-Instruct"]
    assert "Llama-3.2-3B-Instruct" not in fitting
    assert all(m["licence"] and m["repo"].count("/") == 1 for m in small)
    assert all(m["file"].endswith(".gguf") for m in small)
    two_cores = [m["name"] for m in recommended(Machine(24 * GIB, 2)) if m["suggested"]]
    assert two_cores == ["SmolLM2-1.7B-Instruct"]
    many = [m["name"] for m in recommended(Machine(24 * GIB, 8)) if m["suggested"]]
    assert many == ["Llama-3.2-3B-Instruct"]
    assert sum(m["suggested"] for m in recommended(Machine(GIB // 2, 1))) <= 1


def test_the_overview_says_the_machine_and_where_models_run(client: TestClient) -> None:
    found = client.get("/api/models").json()
    assert found["machine"]["cores"] >= 1 and found["machine"]["memory"] > 0
    assert found["offload"] in ("cpu", "gpu")
    assert found["offload"] == ("gpu" if found["machine"]["gpu"] else "cpu")
    assert sum(m["suggested"] for m in found["recommended"]) == 1


def test_with_accounts_only_an_admin_downloads(ctx: AppContext, hub: Hub) -> None:
    from taverna.server.app import create_app

    enable_accounts(ctx, "bob", admin="root")
    client = TestClient(create_app(ctx), raise_server_exceptions=False)
    with client:
        log_in(client, "bob")
        refused = client.post("/api/models/downloads", json={"repo": REPO, "file": FILE})
        assert refused.status_code == 403 and "admin" in refused.text
        assert client.get("/api/models").status_code == 403
    assert not hub.gets()


def test_the_command_line_downloads_with_a_progress_bar(tmp_path: Path, hub: Hub) -> None:
    data = tmp_path / "data"
    said = run("model", "download", REPO, FILE, "--connection", "Tiny", "--data", str(data))
    assert "sha256:" in said and "'Tiny'" in said
    assert (data / "models" / FILE).read_bytes() == SMALL
    listed = run("connection", "list", "--data", str(data))
    assert "Tiny" in listed
    shown = run("model", "list", "--data", str(data))
    assert "Qwen2.5-1.5B-Instruct" in shown and "Apache-2.0" in shown and FILE in shown


def test_a_repository_s_gguf_files_are_listed_with_their_sizes(
    client: TestClient, hub: Hub
) -> None:
    hub.files[(REPO, "README.md")] = b"# Tiny"
    found = client.get("/api/models/files", params={"repo": REPO}).json()
    assert found == [{"file": FILE, "size": len(SMALL)}]
    assert any(r["path"].startswith(f"/api/models/{REPO}") for r in hub.requests)
    missing = client.get("/api/models/files", params={"repo": "nobody/nothing"})
    assert missing.status_code == 404 and "hub_repo_not_found" in missing.text


def test_a_failed_download_is_taken_up_where_it_stopped(client: TestClient, hub: Hub) -> None:
    big = tiny_gguf("Big", padding=24 << 20)
    hub.files[(REPO, "big.gguf")] = big
    hub.cut_next, hub.fail_next = 1, 1  # broken halfway, then the hub fails the retry
    failed = _download(client, file="big.gguf")
    assert failed["state"] == "failed" and failed["code"] == "hub_download_failed", failed
    again = _download(client, file="big.gguf")
    assert again["state"] == "done", again
    gets = [r["range"] for r in hub.gets() if r["path"].endswith("/big.gguf")]
    kept = int(gets[-1].removeprefix("bytes=").removesuffix("-"))
    assert gets[0] == "" and 0 < kept < len(big)
    folder = local_models().models_dir
    assert folder is not None and (folder / "big.gguf").read_bytes() == big
