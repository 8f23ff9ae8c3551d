"""The lorebook trace says where a key found by recursion came from, names an untitled entry
by its keys, and keeps short Chinese words whole; after a turn whose lorebook budget
overflowed, the chat itself says so (the alert on). English on a desktop, Chinese on a
phone."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.browser.test_chat_flow import wait_idle
from tests.support.browser import SIZES, catalog, new_page, say

pytestmark = pytest.mark.browser

BOOK = "Harbour Lore"
WORLD = {
    "entries": {
        "0": {
            "uid": 0,
            "key": ["harbour"],
            "comment": "Harbour",
            "content": "The lighthouse keeper rows out at dawn.",
        },
        # untitled; its key is only in the first entry's text: found by recursion
        "1": {"uid": 1, "key": ["lighthouse"], "comment": "", "content": "Its lamp burns oil."},
    }
}

# The lines of each cell that must stay whole (a two-character Chinese word is one word).
ONE_LINE = """(selector) => [...document.querySelectorAll(selector)].map((cell) => {
  const range = document.createRange();
  range.selectNodeContents(cell);
  const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
  return [cell.textContent, tops.size];
})"""


def _setup(taverna: TavernaServer, size: str) -> str:
    if not any(b["name"] == BOOK for b in taverna.api("GET", "/lorebooks").json()):
        file = (f"{BOOK}.json", json.dumps(WORLD).encode(), "application/json")
        taverna.api("POST", "/lorebooks/import", files={"file": file})
    book = next(b for b in taverna.api("GET", "/lorebooks").json() if b["name"] == BOOK)
    card = taverna.api(
        "POST", "/characters", json={"name": f"Rower {size}", "first_mes": "The harbour is quiet."}
    ).json()
    taverna.api("PUT", f"/characters/{card['id']}/lorebook", json={"lorebook_id": book["id"]})
    return str(taverna.api("POST", "/chats", json={"character_id": card["id"]}).json()["id"])


@pytest.mark.parametrize(
    ("size", "lang"), [("desktop", "en"), ("phone", "zh-CN"), ("desktop", "zh-CN")]
)
def test_the_trace_names_sources_and_the_chat_tells_an_overflow(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, size: str, lang: str
) -> None:
    taverna.api(
        "PUT",
        "/world-info-settings",
        json={
            "world_info_recursive": True,
            "world_info_budget_cap": 0,
            "world_info_overflow_alert": True,
        },
    )
    chat_id = _setup(taverna, f"{size} {lang}")
    words = catalog(lang)
    context, page, errors = new_page(chromium, SIZES[size], lang)
    try:
        page.goto(f"{taverna.url}/#/chat/{chat_id}")
        page.locator("ol.messages > li.message").first.wait_for()
        page.locator("#open-inspector").click()
        page.locator("#inspector [data-tab=trace]").click()
        rows = page.locator("#inspector table.trace tbody tr")
        expect(rows).to_have_count(2)
        found = rows.nth(1).locator("td.found-in")
        # the key, and the entry whose text it was found in
        said = say(words, "inspector.found_in", hit="lighthouse", title="Harbour")
        expect(found).to_have_text(said)
        # no blank title: the untitled entry is named by its keys
        expect(rows.nth(1).locator("td.untitled")).to_have_text("lighthouse")
        expect(rows.nth(0).locator("td").nth(2)).to_have_text("Harbour")
        shot(page, f"{size}-{lang}-trace-recursion")
        cells = "#inspector table.trace th, #inspector table.trace td:nth-child(4)"
        broken = [cell for cell in page.evaluate(ONE_LINE, cells) if cell[1] > 1]
        assert broken == [], broken
        page.locator("#close-inspector").click()

        # A budget of one token: the lorebook overflows; after the turn the chat says so.
        taverna.api("PUT", "/world-info-settings", json={"world_info_budget_cap": 1})
        page.fill("#chat-input", "Row to the harbour.")
        page.click("#send")
        wait_idle(page)
        told = page.locator(".toast.warning .lore-overflow-toast")
        expected = {
            "en": "The lorebook budget ran out: 1 entry was left out of this prompt.",
            "zh-CN": say(words, "inspector.lore_overflow", n=1),
        }[lang]
        expect(told).to_contain_text(expected)
        shot(page, f"{size}-{lang}-overflow-toast")
        assert errors == []
    finally:
        context.close()
        taverna.api("PUT", "/world-info-settings", json={"world_info_budget_cap": 0})
