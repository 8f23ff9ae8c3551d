"""Debian's Chromium, and real `taverna serve` subprocesses: over the stub model, new, or bare."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.stubs.model_server import StubServer
from tests.stubs.taverna_server import TavernaServer
from tests.support.served import connect_served, serving

__all__ = ["TavernaServer", "shot"]  # what the browser tests import from here

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
def taverna(tmp_path_factory: pytest.TempPathFactory, stub: StubServer) -> Iterator[TavernaServer]:
    """`taverna serve` over a new data folder, the module's stub model its default connection."""
    with serving(tmp_path_factory.mktemp("taverna") / "data") as server:
        connect_served(server, stub)
        yield server


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TavernaServer]:
    """`taverna serve` over a new data folder, as a first start leaves it."""
    with serving(tmp_path_factory.mktemp("fresh") / "data") as server:
        yield server


@pytest.fixture
def bare(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TavernaServer]:
    """`taverna serve` over a new data folder whose only connection (the bundled local model,
    where installed) is deleted: nothing can answer."""
    with serving(tmp_path_factory.mktemp("bare") / "data") as server:
        for connection in server.api("GET", "/connections").json():
            server.api("DELETE", f"/connections/{connection['name']}")
        yield server


def shot(page: object, name: str) -> Path:
    """Save a screenshot under tests/artifacts/ (git-ignored) and return its path."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)  # type: ignore[attr-defined]
    return path
