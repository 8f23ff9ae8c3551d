"""A card with a lorebook of its own: importing it asks, as SillyTavern does, whether to
import that book and link it; the character page shows the linked book (or offers the
card's book when it was declined)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import shot
from tests.stubs.taverna_server import TavernaServer
from tests.support.browser import SIZES, new_page


def card_with_book(folder: Path, name: str) -> Path:
    entry = {
        "keys": ["lighthouse"],
        "content": "The lighthouse has been dark for a year.",
        "extensions": {},
        "enabled": True,
        "insertion_order": 100,
        "use_regex": False,
    }
    card = {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {
            "name": name,
            "description": "A keeper of a lighthouse.",
            "first_mes": "The lamp is cold.",
            "extensions": {},
            "character_book": {
                "extensions": {},
                "entries": [
                    {**entry, "id": 0},
                    {**entry, "id": 1, "keys": ["harbour"], "content": "The harbour froze."},
                ],
            },
        },
    }
    path = folder / f"{name}.json"
    path.write_text(json.dumps(card), encoding="utf-8")
    return path


@pytest.mark.parametrize(("size", "lang"), [("desktop", "en"), ("phone", "zh-CN")])
def test_importing_a_card_offers_its_lorebook_and_the_page_shows_it(
    chromium,  # type: ignore[no-untyped-def]
    taverna: TavernaServer,
    tmp_path: Path,
    size: str,
    lang: str,
) -> None:
    accepted = f"Keeper {size}"
    declined = f"Warden {size}"
    context, page, errors = new_page(chromium, SIZES[size], lang)
    native: list[str] = []
    page.on("dialog", lambda d: (native.append(d.message), d.dismiss()))
    page.goto(f"{taverna.url}/#/characters")
    # The page asks in itself (no browser dialog), naming the card and its entries.
    page.locator("#card-file").set_input_files(str(card_with_book(tmp_path, accepted)))
    ask = page.locator("dialog.ask-card-book")
    expect(ask).to_be_visible()
    expect(ask).to_contain_text(accepted)
    expect(ask).to_contain_text("2")
    shot(page, f"{size}-{lang}-ask-card-book")
    ask.locator("#card-book-yes").click()
    page.locator(".card", has_text=accepted).wait_for()
    # The toast names all that was stored: the character and its book.
    toast = page.locator(".toast", has_text=f"{accepted}'s Lorebook")
    expect(toast).to_contain_text(accepted)
    page.locator("#card-file").set_input_files(str(card_with_book(tmp_path, declined)))
    page.locator("#card-book-no").click()
    page.locator(".card", has_text=declined).wait_for()
    expect(ask).to_have_count(0)
    assert native == []

    books = {b["name"]: b for b in taverna.api("GET", "/lorebooks").json()}
    book = books[f"{accepted}'s Lorebook"]
    assert book["entry_count"] == 2
    assert f"{declined}'s Lorebook" not in books
    characters = {c["name"]: c for c in taverna.api("GET", "/characters").json()}
    keeper = taverna.api("GET", f"/characters/{characters[accepted]['id']}").json()
    assert keeper["lorebook_id"] == book["id"]

    # The character page shows the linked book and opens it.
    page.goto(f"{taverna.url}/#/characters/{keeper['id']}")
    link = page.locator("#open-lorebook")
    expect(link).to_have_text(f"{accepted}'s Lorebook")
    shot(page, f"{size}-{lang}-character-linked-book")
    # The declined card's page offers its book again; importing links it.
    page.goto(f"{taverna.url}/#/characters/{characters[declined]['id']}")
    page.locator("#import-card-lorebook").click()
    expect(page.locator("#open-lorebook")).to_have_text(f"{declined}'s Lorebook")
    page.locator("#open-lorebook").click()
    expect(page.locator("h1")).to_have_text(f"{declined}'s Lorebook")
    expect(page.locator("main")).to_contain_text("harbour")
    assert errors == []
    context.close()


@pytest.mark.parametrize(("size", "lang"), [("desktop", "en"), ("phone", "zh-CN")])
def test_always_importing_a_cards_lorebook_is_remembered(
    chromium,  # type: ignore[no-untyped-def]
    taverna: TavernaServer,
    tmp_path: Path,
    size: str,
    lang: str,
) -> None:
    first, second = f"Ferryman {size}", f"Pilot {size}"
    context, page, _ = new_page(chromium, SIZES[size], lang)
    page.goto(f"{taverna.url}/#/import")
    setting = page.locator("#always-card-books")
    expect(setting).not_to_be_checked()
    page.goto(f"{taverna.url}/#/characters")
    page.locator("#card-file").set_input_files(str(card_with_book(tmp_path, first)))
    page.locator("#card-book-always").click()
    page.locator(".card", has_text=first).wait_for()
    # The next card's book comes in without a question, and the toast says so.
    page.reload()
    page.locator("#card-file").set_input_files(str(card_with_book(tmp_path, second)))
    page.locator(".card", has_text=second).wait_for()
    expect(page.locator(".toast", has_text=f"{second}'s Lorebook")).to_be_visible()
    assert page.locator("dialog.ask-card-book").count() == 0
    books = {b["name"] for b in taverna.api("GET", "/lorebooks").json()}
    assert {f"{first}'s Lorebook", f"{second}'s Lorebook"} <= books
    # The Import page shows the remembered choice, and unticking it asks again.
    page.goto(f"{taverna.url}/#/import")
    expect(setting).to_be_checked()
    shot(page, f"{size}-{lang}-always-card-books")
    setting.uncheck()
    page.goto(f"{taverna.url}/#/characters")
    page.locator("#card-file").set_input_files(str(card_with_book(tmp_path, f"Third {size}")))
    expect(page.locator("dialog.ask-card-book")).to_be_visible()
    page.locator("#card-book-no").click()
    context.close()


@pytest.mark.parametrize(("size", "lang"), [("desktop", "en"), ("phone", "zh-CN")])
def test_a_folder_import_ends_with_a_toast_of_what_was_stored(
    chromium,  # type: ignore[no-untyped-def]
    taverna: TavernaServer,
    tmp_path: Path,
    size: str,
    lang: str,
) -> None:
    folder = tmp_path / "default-user"
    (folder / "characters").mkdir(parents=True)
    card_with_book(folder / "characters", f"Harbourmaster {size}")
    context, page, _ = new_page(chromium, SIZES[size], lang)
    page.goto(f"{taverna.url}/#/import")
    page.locator("#st-folder").set_input_files(str(folder))
    page.locator(".report h3").first.wait_for(timeout=30_000)
    done = "Import finished. Stored" if lang == "en" else "导入完成。已保存"
    toast = page.locator(".toast", has_text=done)
    expect(toast).to_be_visible()
    expect(toast).to_contain_text("1")
    shot(page, f"{size}-{lang}-folder-import-toast")
    context.close()
