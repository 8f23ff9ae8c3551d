"""A real `taverna serve` subprocess, a local stub model server, and Debian's Chromium."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.stubs.model_server import StubServer, start_stub

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class TavernaServer:
    """`taverna serve` on a free port over one data folder; can be stopped and started again."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.log = data.parent / "serve.log"

    def start(self) -> TavernaServer:
        command = [
            str(Path(sys.executable).parent / "taverna"),
            "serve",
            "--port",
            str(self.port),
            "--data",
            str(self.data),
        ]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"taverna serve exited: {self.log.read_text()}")
            try:
                if httpx.get(f"{self.url}/api/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"taverna serve did not start: {self.log.read_text()}")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def api(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        response = httpx.request(method, f"{self.url}/api{path}", timeout=10, **kwargs)  # type: ignore[arg-type]
        response.raise_for_status()
        return response


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (make browser-deps)")
    from playwright.sync_api import expect, sync_playwright

    # A busy machine (CI shares its cores) can take a few seconds per step.
    expect.set_options(timeout=15_000)

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with start_stub() as server:
        yield server


@pytest.fixture(scope="module")
def taverna(tmp_path_factory: pytest.TempPathFactory, stub: StubServer) -> Iterator[TavernaServer]:
    server = TavernaServer(tmp_path_factory.mktemp("taverna") / "data").start()
    server.api(
        "POST",
        "/connections",
        json={
            "name": "stub",
            "api": "openai",
            "url": stub.base_url("openai"),
            "model": "stub-model",
            "key": None,
            "default": True,
        },
    )
    try:
        yield server
    finally:
        server.stop()


def shot(page: object, name: str) -> Path:
    """Save a screenshot under tests/artifacts/ (git-ignored) and return its path."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)  # type: ignore[attr-defined]
    return path
