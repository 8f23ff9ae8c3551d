"""Importing a file SillyTavern reads loosely through the page: the person is told which
field was read otherwise than written, in a warning toast naming the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot

pytestmark = pytest.mark.browser

# A V2 card as third-party tools write it: the character's note depth as text.
LOOSE_CARD = {
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {
        "name": "Loose Lena",
        "description": "{{char}} sells rope.",
        "first_mes": "Need rope?",
        "alternate_greetings": None,
        "extensions": {"depth_prompt": {"prompt": "Lena counts knots.", "depth": "2"}},
    },
}

RISU_BOOK = {
    "type": "risu",
    "ver": 1,
    "data": [{"key": "rope, knot", "insertorder": 5, "comment": "Rope", "content": "Hemp."}],
}


def test_a_loose_card_imported_from_the_page_shows_the_field_in_a_warning(
    chromium: object, taverna: TavernaServer, tmp_path: Path
) -> None:
    card = tmp_path / "loose-lena.json"
    card.write_text(json.dumps(LOOSE_CARD))
    page = chromium.new_page(viewport={"width": 1280, "height": 800})  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(taverna.url + "/#/characters")
    page.get_by_role("button", name="Import", exact=True).wait_for()
    page.locator("#card-file").set_input_files(str(card))
    page.locator(".card", has_text="Loose Lena").wait_for()
    warning = page.locator(".toast.warning", has_text="loose-lena.json")
    expect(warning).to_be_visible()
    # the first value read loosely, named by its field, and how many there were
    expect(warning).to_contain_text("data.alternate_greetings")
    expect(warning).to_contain_text("2 values")
    expect(warning).to_have_attribute("role", "status")
    shot(page, "import-warning-toast")
    assert errors == []
    page.close()


def test_a_risu_lorebook_imported_from_the_page_says_it_was_converted(
    chromium: object, taverna: TavernaServer, tmp_path: Path
) -> None:
    book = tmp_path / "rigging.json"
    book.write_text(json.dumps(RISU_BOOK))
    page = chromium.new_page(viewport={"width": 1280, "height": 800})  # type: ignore[attr-defined]
    page.goto(taverna.url + "/#/lorebooks")
    page.get_by_role("button", name="Import", exact=True).wait_for()
    page.locator("#lorebook-file").set_input_files(str(book))
    warning = page.locator(".toast.warning", has_text="rigging.json")
    expect(warning).to_contain_text("type: converted from a RisuAI lorebook")
    expect(warning).not_to_contain_text("1 values")  # one warning is shown as it is
    page.locator("a", has_text="rigging").first.wait_for()
    page.close()
