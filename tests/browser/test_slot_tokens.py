"""The prompt manager shows each slot's tokens in a chat's next prompt, beside the slot, the
chat chosen above the list. English on a desktop, Chinese on a phone."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.support.browser import SIZES, catalog, new_page, say

pytestmark = pytest.mark.browser


@pytest.mark.parametrize(("size", "lang"), [("desktop", "en"), ("phone", "zh-CN")])
def test_each_slot_shows_its_tokens_in_the_chosen_chat(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, st_fixtures: Path, size: str, lang: str
) -> None:
    path = st_fixtures / "presets" / "openai" / "Default.json"
    files = {"file": (f"Counted {size}.json", path.read_bytes(), "application/json")}
    preset = taverna.api("POST", "/presets/import?kind=chat", files=files).json()
    taverna.api("POST", f"/presets/{preset['id']}/activate")
    card = taverna.api(
        "POST",
        "/characters",
        json={
            "name": f"Counter {size}",
            "description": "A clerk who counts every coin twice. " * 12,
            "first_mes": "Next, please.",
        },
    ).json()
    chat = taverna.api("POST", "/chats", json={"character_id": card["id"]}).json()
    ledger = taverna.api("GET", f"/chats/{chat['id']}/prompt").json()["prompt"]["ledger"]
    counts = ledger["slot_tokens"]
    assert counts["charDescription"] >= 90 and counts["main"] > 0, counts

    words = catalog(lang)
    context, page, errors = new_page(chromium, SIZES[size], lang)
    try:
        page.goto(f"{taverna.url}/#/presets/{preset['id']}")
        chosen = page.locator("#slot-tokens-chat")
        # the newest chat is the one counted first
        expect(chosen).to_have_value(chat["id"])
        description = page.locator(".prompt-order .slot[data-identifier=charDescription]")
        expected = counts["charDescription"]
        if lang == "en":
            expect(description.locator(".slot-tokens")).to_have_text(f"{expected} tokens")
        else:
            text = say(words, "presets.slot_tokens", n=expected)
            expect(description.locator(".slot-tokens")).to_have_text(text)
        main = page.locator(".prompt-order .slot[data-identifier=main] .slot-tokens")
        expect(main).to_contain_text(str(counts["main"]))
        expect(page.locator("#slot-tokens-note")).to_contain_text(str(ledger["total_tokens"]))
        # a prompt with nothing in this chat says 0; a marker with nothing says nothing
        empty = page.locator(".prompt-order .slot[data-identifier=nsfw] .slot-tokens")
        expect(empty).to_contain_text("0")
        scenario = page.locator(".prompt-order .slot[data-identifier=scenario] .slot-tokens")
        expect(scenario).to_be_hidden()
        description.scroll_into_view_if_needed()
        shot(page, f"{size}-{lang}-slot-tokens")
        assert page.evaluate("document.documentElement.scrollWidth") <= SIZES[size]["width"]
        assert errors == []
    finally:
        context.close()
