"""A real `taverna serve` subprocess, a local stub model server, and Debian's Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.stubs.model_server import StubServer, start_stub
from tests.stubs.taverna_server import TavernaServer

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
