"""The model in the box, in the page: a new data folder, the sample character, one message,
a streamed reply from the local model, and the page saying plainly what it is."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from taverna.services.connections import local_models
from tests.browser.conftest import shot
from tests.browser.test_chat_flow import DESKTOP, PHONE, wait_idle
from tests.stubs.taverna_server import TavernaServer

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not local_models.available(), reason="the `local` extra is not installed"),
]


def test_one_message_to_the_sample_character_gets_a_streamed_reply(
    chromium,  # type: ignore[no-untyped-def]
    fresh: TavernaServer,
) -> None:
    connections = fresh.api("GET", "/connections").json()
    assert [(c["name"], c["api"], c["default"]) for c in connections] == [
        ("Local model", "local", True)
    ]
    sample = next(c for c in fresh.api("GET", "/characters").json() if c["name"] == "Ione Calder")
    chat = fresh.api("POST", "/chats", json={"character_id": sample["id"]}).json()
    page = chromium.new_page(viewport=DESKTOP)
    page.goto(f"{fresh.url}/#/chat/{chat['id']}")
    expect(page.locator("#local-model-notice")).to_be_visible()
    expect(page.locator("#local-model-notice a")).to_have_attribute("href", "#/connections")
    page.fill("#chat-input", "Hello! Where am I?")
    page.click("#send")
    # the model's process starts with this first message, then the reply streams
    page.locator("#streaming").wait_for(timeout=120_000)
    page.locator("#streaming").wait_for(state="detached", timeout=300_000)
    wait_idle(page)
    reply = page.locator("ol.messages > li.message.assistant").last
    assert reply.locator(".content").inner_text().strip()
    shot(page, "local-model-reply")
    page.set_viewport_size(PHONE)
    page.reload()
    expect(page.locator("#local-model-notice")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    shot(page, "local-model-phone")
    page.goto(f"{fresh.url}/#/connections")
    expect(page.locator(".local-note")).to_be_visible()
    page.close()
