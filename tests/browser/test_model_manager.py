"""The model manager in the page, against a stand-in hub and a stand-in Ollama on 127.0.0.1:
the recommended models with their licences, a GGUF file downloaded with its progress into
a connection of its own, and a model pulled into Ollama; at 1280×800 in English and at
375×812 in Chinese."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import shot
from tests.stubs.hub_server import Hub, start_hub, tiny_gguf
from tests.stubs.ollama_server import Ollama, start_ollama
from tests.stubs.taverna_server import TavernaServer
from tests.support.browser import DESKTOP, PHONE, catalog, new_page, say
from tests.support.served import serving

pytestmark = pytest.mark.browser

CUSTOM = ("someone/Tiny-Instruct-GGUF", "tiny-instruct-q4_k_m.gguf")
LISTED = ("bartowski/SmolLM2-360M-Instruct-GGUF", "SmolLM2-360M-Instruct-Q4_K_M.gguf")


@pytest.fixture(scope="module")
def hub() -> Iterator[Hub]:
    files = {CUSTOM: tiny_gguf("Tiny"), LISTED: tiny_gguf("SmolLM2-360M")}
    with start_hub(files) as stub:
        yield stub


@pytest.fixture(scope="module")
def ollama() -> Iterator[Ollama]:
    with start_ollama() as stub:
        yield stub


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, hub: Hub, ollama: Ollama
) -> Iterator[TavernaServer]:
    folder = tmp_path_factory.mktemp("models")
    env = {"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(folder / "hf-cache")}
    with serving(folder / "data", env=env) as server:
        body = {"name": "My Ollama", "api": "ollama", "url": ollama.url}
        assert server.api("POST", "/connections", json=body).status_code == 201
        yield server


def _no_overflow(page, width: int) -> None:  # type: ignore[no-untyped-def]
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def test_desktop_english_download_and_pull(  # type: ignore[no-untyped-def]
    chromium, served: TavernaServer, hub: Hub, ollama: Ollama
) -> None:
    words = catalog("en")
    context, page, errors = new_page(chromium, DESKTOP, "en")
    page.goto(f"{served.url}/#/connections")
    page.locator("#get-model").click()
    expect(page.locator("h1")).to_have_text(words["models.title"])
    expect(page.locator("#model-machine")).to_contain_text("cores")
    items = page.locator("#model-recommended li.model")
    expect(items).to_have_count(8)
    expect(page.locator("#model-recommended li.suggested")).to_have_count(1)
    expect(items.filter(has_text="Qwen2.5-3B-Instruct")).to_contain_text("Qwen Research License")
    expect(items.filter(has_text="gemma-2-2b-it")).to_contain_text("Gemma Terms of Use")

    # naming the repository lists its GGUF files; its only one is chosen
    page.locator("#model-custom input[name=repo]").fill(CUSTOM[0])
    page.locator("#model-custom input[name=repo]").dispatch_event("change")
    expect(page.locator("#model-files-said")).to_have_text("1 GGUF file in this repository")
    expect(page.locator("#model-custom input[name=file]")).to_have_value(CUSTOM[1])
    page.locator("#model-custom button[type=submit]").click()
    done = page.locator("#model-custom .model-job[data-state=done]")
    expect(done).to_be_visible(timeout=60_000)
    expect(done).to_contain_text(say(words, "models.done_hub", connection="tiny-instruct-q4_k_m"))
    made = [c for c in served.api("GET", "/connections").json() if c["api"] == "local"]
    assert any(c["model"] == CUSTOM[1] for c in made)

    page.locator("#model-ollama input[name=model]").fill("tinyllama")
    page.locator("#model-ollama button[type=submit]").click()
    pulled = page.locator("#model-ollama .model-job[data-state=done]")
    expect(pulled).to_be_visible(timeout=30_000)
    expect(pulled).to_contain_text("tinyllama")
    assert "tinyllama:latest" in ollama.models
    shot(page, "model-manager-desktop")

    # a file the hub does not have: said in the page, no connection made
    page.locator("#model-custom input[name=file]").fill("missing.gguf")
    page.locator("#model-custom button[type=submit]").click()
    expect(page.locator("#model-custom .model-job[data-state=failed]")).to_contain_text(
        "missing.gguf"
    )
    _no_overflow(page, DESKTOP["width"])
    assert errors == []
    context.close()


def test_phone_chinese_downloads_a_recommended_model(  # type: ignore[no-untyped-def]
    chromium, served: TavernaServer, hub: Hub
) -> None:
    words = catalog("zh-CN")
    context, page, errors = new_page(chromium, PHONE, "zh-CN")
    page.goto(f"{served.url}/#/models")
    expect(page.locator("h1")).to_have_text(words["models.title"])
    expect(page.locator("#model-recommended h2")).to_have_text(words["models.recommended"])
    item = page.locator("#model-recommended li.model", has_text="SmolLM2-360M-Instruct")
    expect(item).to_contain_text("Apache-2.0")
    item.get_by_role("button", name=words["models.download"]).click()
    done = item.locator(".model-job[data-state=done]")
    expect(done).to_be_visible(timeout=60_000)
    expect(done).to_contain_text(
        say(words, "models.done_hub", connection="SmolLM2-360M-Instruct-Q4_K_M")
    )
    expect(page.locator("#model-ollama h2")).to_have_text(words["models.ollama"])
    _no_overflow(page, PHONE["width"])
    item.scroll_into_view_if_needed()
    shot(page, "model-manager-phone-zh")
    assert errors == []
    context.close()


def test_the_downloaded_file_is_in_the_models_folder(served: TavernaServer) -> None:
    folder = Path(served.data) / "models"
    assert {p.name for p in folder.iterdir()} >= {CUSTOM[1], LISTED[1]}
