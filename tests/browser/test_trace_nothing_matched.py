"""The inspector's lorebook trace when books are attached and no entry matched: it names the
books scanned instead of saying that no entry was considered. Both languages, both sizes."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import shot
from tests.stubs.taverna_server import TavernaServer
from tests.support.browser import SIZES, new_page

pytestmark = pytest.mark.browser

WORDS = {"en": "no entry matched", "zh-CN": "没有条目被触发"}


def chat_with_book(server: TavernaServer, name: str, greeting: str) -> str:
    entries = {
        "0": {"uid": 0, "key": ["lighthouse"], "content": "The light is red.", "position": 0}
    }
    book = server.api(
        "POST",
        "/lorebooks/import",
        files={"file": ("Harbor Lore.json", json.dumps({"entries": entries}), "application/json")},
    ).json()
    card = server.api("POST", "/characters", json={"name": name, "first_mes": greeting}).json()
    server.api("PUT", f"/characters/{card['id']}/lorebook", json={"lorebook_id": book["id"]})
    return str(server.api("POST", "/chats", json={"character_id": card["id"]}).json()["id"])


@pytest.mark.parametrize(("size", "lang"), [("desktop", "en"), ("phone", "zh-CN")])
def test_the_trace_says_books_attached_nothing_matched(
    chromium,  # type: ignore[no-untyped-def]
    fresh: TavernaServer,
    size: str,
    lang: str,
) -> None:
    quiet = chat_with_book(fresh, f"Mira {size}", "Hi.")
    lit = chat_with_book(fresh, f"Ione {size}", "See the lighthouse?")
    context, page, errors = new_page(chromium, SIZES[size], lang)
    page.goto(f"{fresh.url}/#/chat/{quiet}")
    page.locator("#open-inspector").click()
    page.locator("#inspector [data-tab=trace]").click()
    said = page.locator("#inspector .no-trace")
    expect(said).to_contain_text(WORDS[lang])
    expect(said.locator(".scanned-books")).to_have_text("Harbor Lore")
    shot(page, f"{size}-{lang}-trace-nothing-matched")
    page.locator("#close-inspector").click()

    # An entry that matched is listed as before, with no such sentence.
    page.goto(f"{fresh.url}/#/chat/{lit}")
    page.locator("#open-inspector").click()
    page.locator("#inspector [data-tab=trace]").click()
    expect(page.locator("#inspector table.trace tbody tr")).to_have_count(1)
    expect(page.locator("#inspector .no-trace")).to_have_count(0)
    assert errors == []
    context.close()
