"""The summary in the page: make one, see which message it belongs to, change it, hide
what it covers, remove it; on a desktop and a phone-sized screen."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.browser.test_pages import seed_chat
from tests.stubs.model_server import Reply, StubServer

pytestmark = pytest.mark.browser


def test_a_summary_is_made_shown_changed_hiding_and_removed(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, stub: StubServer
) -> None:
    chat_id = seed_chat(taverna, stub)
    ids = [m["id"] for m in taverna.api("GET", f"/chats/{chat_id}").json()["messages"]]
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    page.goto(f"{taverna.url}/#/chat/{chat_id}")
    items = page.locator("ol.messages > li.message")
    expect(items).to_have_count(len(ids))

    page.locator("#open-settings").click()
    drawer = page.locator("#chat-settings")
    expect(drawer.locator("#summary-where")).to_have_text("No summary on this branch yet.")
    stub.script(Reply(tokens=["Ione ferried the guest ", "toward the lighthouse."]))
    drawer.locator("#summary-make").click()
    expect(drawer.locator("#summary-text")).to_have_value(
        "Ione ferried the guest toward the lighthouse."
    )
    last = len(ids) - 1
    expect(drawer.locator("#summary-where")).to_have_text(f"Summary #1, on message #{last}")
    # the summary prompt went last in the request, as a quiet prompt
    assert stub.requests[-1].body["messages"][-1]["content"].startswith("Ignore previous")
    # the chat marks the message it belongs to
    expect(items.nth(last).locator(".summary-badge")).to_have_text("summary #1")

    drawer.locator("#summary-text").fill("Ione took the guest across the canal.")
    drawer.locator("#summary-save").click()
    expect(page.locator(".toast").last).to_contain_text("Saved")
    current = taverna.api("GET", f"/chats/{chat_id}/summary").json()["current"]
    assert current["text"] == "Ione took the guest across the canal."
    assert current["node_id"] == ids[last]

    # the next prompt carries it after the main prompt; the inspector's ledger names it
    # and the message it belongs to
    page.locator("#close-settings").click()
    stub.script(Reply(tokens=["Across the canal, then."]))
    page.locator("#chat-input").fill("Where now?")
    page.locator("#send").click()
    expect(items.last).to_contain_text("Across the canal, then.")
    page.locator("#send").wait_for(state="visible")
    assert {"role": "system", "content": "[Summary: Ione took the guest across the canal.]"} in (
        stub.requests[-1].body["messages"]
    )
    page.locator("#open-inspector").click()
    inspector = page.locator("#inspector")
    inspector.get_by_role("tab", name="Ledger").click()
    row = inspector.locator("table.ledger tr", has_text="summary").first
    expect(row.locator("td.src")).to_have_text(f"#{last} Ione Calder")
    page.locator("#close-inspector").click()
    page.locator("#open-settings").click()

    # hide what it covers, but the newest two
    drawer.locator("details.summary-settings > summary").click()
    drawer.locator("#summary-hideCovered").check()
    drawer.locator("#summary-hideKeep").fill("2")
    drawer.locator("#summary-settings-save").click()
    expect(items.nth(0).locator(".summary-badge")).to_have_text("covered by summary #1")
    expect(items.nth(last - 1).locator(".summary-badge")).to_have_count(0)
    settings = taverna.api("GET", "/summary-settings").json()
    assert settings["hideCovered"] is True and settings["hideKeep"] == 2

    page.set_viewport_size({"width": 375, "height": 812})
    expect(drawer.locator("#summary-remove")).to_be_visible()
    shot(page, "summary-phone")
    drawer.locator("#summary-remove").click()
    expect(drawer.locator("#summary-where")).to_have_text("No summary on this branch yet.")
    expect(page.locator(".summary-badge")).to_have_count(0)
    assert taverna.api("GET", f"/chats/{chat_id}/summary").json()["current"] is None
    taverna.api("PUT", "/summary-settings", json={"hideCovered": False})
    page.close()
