"""A SillyTavern folder imported from the page into a library that already has its default
persona: the folder's default persona becomes the only one marked default on the Personas
page. Desktop in English, phone in Chinese."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import shot
from tests.browser.test_page_small_things import CASES, catalog, open_page
from tests.stubs.taverna_server import TavernaServer
from tests.support.served import serving

pytestmark = pytest.mark.browser

FILES = Path(__file__).resolve().parents[1] / "sillytavern_files"


@pytest.fixture
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TavernaServer]:
    """A new server for each case: the import makes its folder's persona the default."""
    with serving(tmp_path_factory.mktemp("personas") / "data") as started:
        yield started


@pytest.mark.parametrize(("size", "lang", "width", "height"), CASES)
def test_after_a_folder_import_one_persona_is_the_default(  # type: ignore[no-untyped-def]
    chromium, fresh: TavernaServer, tmp_path: Path, size: str, lang: str, width: int, height: int
) -> None:
    words = catalog(lang)
    fresh.api("POST", "/personas", json={"name": "Me", "is_default": True})
    folder = tmp_path / "default-user"
    (folder / "User Avatars").mkdir(parents=True)
    (folder / "chats").mkdir()
    (folder / "User Avatars" / "wren.png").write_bytes(b"\x89PNG\r\n\x1a\npicture")
    shutil.copy(FILES / "settings.json", folder / "settings.json")

    context, page = open_page(chromium, lang, width, height)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{fresh.url}/#/import")
    page.locator("#st-folder").set_input_files(str(folder))
    page.locator(".report h3").first.wait_for(timeout=30_000)
    page.goto(f"{fresh.url}/#/personas")
    marked = page.locator("main li", has_text=f"({words['personas.default']})")
    expect(page.locator("main li", has_text="Wren")).to_have_count(1)
    expect(marked).to_have_count(1)
    expect(marked).to_contain_text("Wren")
    shot(page, f"{size}-{lang}-personas-after-import")
    defaults = [p["name"] for p in fresh.api("GET", "/personas").json() if p["is_default"]]
    assert defaults == ["Wren"]
    assert errors == []
    context.close()
