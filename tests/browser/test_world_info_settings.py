"""The World Info settings on the lorebooks page: a book made active for every chat, the
scan depth, the insertion strategy and the overflow alert changed and saved, kept after a
reload; with the alert on, the inspector of a chat whose lorebook budget overflowed says
so. In English on a desktop and in Chinese on a phone-sized screen."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.support.browser import SIZES, catalog, new_page

pytestmark = pytest.mark.browser

BOOK = "Beacon Atlas"


def _book(taverna: TavernaServer) -> None:
    """The lorebook of the test, imported once for the module's server."""
    if any(b["name"] == BOOK for b in taverna.api("GET", "/lorebooks").json()):
        return
    world = {"entries": {"0": {"uid": 0, "key": ["lighthouse"], "content": "The lamp is old."}}}
    file = (f"{BOOK}.json", json.dumps(world).encode(), "application/json")
    taverna.api("POST", "/lorebooks/import", files={"file": file})


@pytest.mark.parametrize(("size", "lang"), [("desktop", "en"), ("phone", "zh-CN")])
def test_world_info_settings_are_kept_and_the_overflow_is_told(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, size: str, lang: str
) -> None:
    _book(taverna)
    taverna.api(
        "PUT",
        "/world-info-settings",
        json={
            "world_info": {"globalSelect": []},
            "world_info_depth": 2,
            "world_info_budget_cap": 0,
            "world_info_character_strategy": 1,
            "world_info_overflow_alert": False,
        },
    )
    words = catalog(lang)
    context, page, errors = new_page(chromium, SIZES[size], lang)
    try:
        page.goto(f"{taverna.url}/#/lorebooks")
        panel = page.locator("#world-info-settings")
        expect(panel.locator("summary")).to_have_text(words["wi.title"])
        panel.locator("summary").click()
        book = panel.locator("#wi-global label", has_text=BOOK).locator("input")
        expect(book).not_to_be_checked()
        book.check()
        panel.locator("#wi-world_info_depth").fill("5")
        panel.locator("#wi-world_info_budget_cap").fill("1")
        panel.locator("#wi-world_info_character_strategy").select_option("2")
        panel.locator("#wi-world_info_overflow_alert").check()
        panel.locator("summary").scroll_into_view_if_needed()
        shot(page, f"world-info-settings-{size}-{lang}")
        panel.locator("#wi-settings-save").click()
        expect(page.locator(".toast").last).to_contain_text(words["common.saved"])
        saved = taverna.api("GET", "/world-info-settings").json()
        assert saved["world_info"] == {"globalSelect": [BOOK]}
        assert saved["world_info_depth"] == 5
        assert saved["world_info_budget_cap"] == 1
        assert saved["world_info_character_strategy"] == 2
        assert saved["world_info_overflow_alert"] is True

        # Reloaded, the panel shows what is stored, and the list marks the book.
        page.reload()
        panel.locator("summary").click()
        expect(panel.locator("#wi-global label", has_text=BOOK).locator("input")).to_be_checked()
        expect(panel.locator("#wi-world_info_depth")).to_have_value("5")
        expect(panel.locator("#wi-world_info_character_strategy")).to_have_value("2")
        expect(panel.locator("#wi-world_info_overflow_alert")).to_be_checked()
        row = page.locator("ul.list li", has_text=BOOK)
        expect(row.locator(".wi-badge")).to_have_text(words["wi.global_badge"])

        # A chat that names the book's key: a budget of one token overflows, and the
        # inspector tells it, the alert being on.
        card = taverna.api(
            "POST",
            "/characters",
            json={"name": f"Keeper {size}", "first_mes": "The lighthouse stands by the harbour."},
        ).json()
        chat = taverna.api("POST", "/chats", json={"character_id": card["id"]}).json()
        page.goto(f"{taverna.url}/#/chat/{chat['id']}")
        page.locator("ol.messages > li.message").first.wait_for()
        page.locator("#open-inspector").click()
        notice = page.locator("#lore-overflow")
        expect(notice).to_be_visible()
        expect(notice.get_by_role("link")).to_have_text(words["wi.title"])
        shot(page, f"world-info-overflow-{size}-{lang}")

        # Alert off: the same overflow goes untold.
        taverna.api("PUT", "/world-info-settings", json={"world_info_overflow_alert": False})
        page.locator("#close-inspector").click()
        page.locator("#open-inspector").click()
        # The tabs are drawn once the notice is decided.
        expect(page.locator("#inspector .tabs button").first).to_be_visible()
        expect(page.locator("#lore-overflow")).to_have_count(0)
        assert not errors
    finally:
        context.close()
