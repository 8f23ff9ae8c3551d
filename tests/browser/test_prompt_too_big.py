"""A card too big for the connection's context: the page says so, with the numbers and
what to do, and offers no Retry (trying again cannot succeed); nothing reaches the model."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import shot
from tests.stubs.model_server import StubServer
from tests.stubs.taverna_server import TavernaServer
from tests.support.browser import new_page

BIG = "The lighthouse keeper remembers every ship that passed the reef. " * 900
WORDS = {"en": "trying again cannot help", "zh-CN": "重试也无济于事"}


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_a_card_too_big_is_explained_and_not_retried(
    chromium,  # type: ignore[no-untyped-def]
    taverna: TavernaServer,
    stub: StubServer,
    lang: str,
) -> None:
    card = taverna.api(
        "POST",
        "/characters",
        json={"name": f"Vast {lang}", "description": BIG, "first_mes": "Hello."},
    ).json()
    chat = taverna.api("POST", "/chats", json={"character_id": card["id"]}).json()
    stub.requests.clear()
    context, page, errors = new_page(chromium, {"width": 1280, "height": 800}, lang)
    page.goto(f"{taverna.url}/#/chat/{chat['id']}")
    page.locator("ol.messages .message").first.wait_for()
    page.locator("#chat-input").fill("Tell me about the reef.")
    page.locator("#send").click()

    failure = page.locator("#failure")
    expect(failure).to_be_visible()
    expect(failure).to_contain_text(WORDS[lang])
    # the server's explanation, with the numbers
    expect(failure).to_contain_text("cannot fit")
    expect(failure).to_contain_text("tokens")
    expect(failure.locator("#retry")).to_have_count(0)
    expect(failure.get_by_role("button")).to_have_count(1)  # Dismiss only
    shot(page, f"desktop-{lang}-prompt-too-big")
    assert not [r for r in stub.requests if r.path.endswith("/chat/completions")]
    assert errors == []
    context.close()
