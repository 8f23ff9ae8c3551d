"""Importing a file SillyTavern reads loosely through the page: the person is told which
field was read otherwise than written, in a warning toast naming the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.support.browser import new_page

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
    # The sentence in plain words; the field it names ("type") folded under "details".
    expect(warning).to_contain_text("converted from a RisuAI lorebook", use_inner_text=True)
    expect(warning.locator("details.field-path code")).to_have_text("type")
    expect(warning).not_to_contain_text("1 values")  # one warning is shown as it is
    page.locator("a", has_text="rigging").first.wait_for()
    page.close()


@pytest.mark.parametrize(
    ("size", "lang", "viewport", "words", "details"),
    [
        ("desktop", "en", {"width": 1280, "height": 800}, "Character's note depth", "details"),
        ("phone", "zh-CN", {"width": 375, "height": 812}, "角色注释深度", "详情"),
    ],
)
def test_an_import_warning_says_the_field_in_plain_words_and_folds_its_path(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, tmp_path: Path, size, lang, viewport, words, details
) -> None:
    name = f"Empty Depth {size}"
    data = {**LOOSE_CARD["data"], "name": name, "alternate_greetings": []}
    data["extensions"] = {"depth_prompt": {"prompt": "Knots.", "depth": ""}}
    card = tmp_path / "empty-depth.json"
    card.write_text(json.dumps({**LOOSE_CARD, "data": data}))
    context, page, _ = new_page(chromium, viewport, lang)
    page.goto(taverna.url + "/#/characters")
    page.locator("#card-file").set_input_files(str(card))
    warning = page.locator(".toast.warning", has_text="empty-depth.json")
    expect(warning).to_be_visible()
    # Plain words first; the raw field path is not what the person reads...
    expect(warning).to_contain_text(words, use_inner_text=True)
    assert "data.extensions" not in warning.inner_text()
    # ...but it is a fold away, under "details".
    fold = warning.locator("details.field-path")
    expect(fold.locator("summary")).to_have_text(details)
    fold.locator("summary").click()
    expect(fold.locator("code")).to_have_text("data.extensions.depth_prompt.depth")
    expect(fold.locator("code")).to_be_visible()
    shot(page, f"{size}-{lang}-import-warning-plain")
    context.close()
