"""On a phone the story gets the screen: the small model's notice closes (and stays closed),
the Quick Reply bar and the pickers row fold away behind one toggle (remembered too), and
the chat's list then has at least 65% of the height of a 375×812 screen; on a desktop the
same controls work the same way."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from taverna.services.connections import local_models
from tests.browser.conftest import TavernaServer, shot
from tests.support.browser import SIZES, catalog, new_page

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not local_models.available(), reason="the `local` extra is not installed"),
]

STORY_SHARE = "() => document.querySelector('ol.messages').getBoundingClientRect().height / window.innerHeight"


@pytest.mark.parametrize(("size", "lang"), [("desktop", "en"), ("phone", "zh-CN")])
def test_the_story_gets_the_height(  # type: ignore[no-untyped-def]
    chromium, fresh: TavernaServer, size: str, lang: str
) -> None:
    words = catalog(lang)
    sets = {
        "name": f"Moods {size}",
        "active": True,
        "replies": [{"label": f"Calm {size}", "message": "I breathe."}],
    }
    fresh.api("PUT", "/quick-replies", json=sets).raise_for_status()
    card = fresh.api(
        "POST", "/characters", json={"name": f"Lark {size}", "first_mes": "The tide turns."}
    ).json()
    chat = fresh.api("POST", "/chats", json={"character_id": card["id"]}).json()
    context, page, errors = new_page(chromium, SIZES[size], lang)
    page.goto(f"{fresh.url}/#/chat/{chat['id']}")
    notice = page.locator("#local-model-notice")
    quick = page.locator(".quick-replies")
    pickers = page.locator("#turn-bar")
    toggle = page.locator("#composer-tools")
    expect(notice).to_be_visible()
    expect(quick.get_by_role("button", name=f"Calm {size}")).to_be_visible()
    expect(pickers).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(toggle).to_have_attribute("aria-label", words["chat.hide_tools"])
    shot(page, f"{size}-{lang}-chat-chrome-open")

    # The notice closes; the bars fold away.
    page.get_by_role("button", name=words["chat.close_notice"]).click()
    expect(notice).to_be_hidden()
    toggle.click()
    expect(quick).to_be_hidden()
    expect(pickers).to_be_hidden()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(toggle).to_have_attribute("aria-label", words["chat.show_tools"])
    expect(page.locator("#chat-input")).to_be_visible()
    expect(page.locator("#send")).to_be_visible()
    share = page.evaluate(STORY_SHARE)
    print(f"\n{size} {lang}: the story has {share:.0%} of the height")
    assert share >= 0.65, share
    shot(page, f"{size}-{lang}-chat-chrome-folded")

    # Both are remembered in this browser: the next open is the same.
    page.reload()
    expect(page.locator("ol.messages > li.message")).to_have_count(1)
    # The connections are read (the pickers have them): the notice would show by now.
    expect(page.locator("#connection-picker option")).not_to_have_count(0)
    page.wait_for_timeout(500)
    expect(notice).to_be_hidden()
    expect(quick).to_be_hidden()
    expect(pickers).to_be_hidden()
    assert page.evaluate(STORY_SHARE) >= 0.65
    # The bars come back with the toggle, the reply button working as before.
    toggle.click()
    expect(pickers).to_be_visible()
    expect(quick.get_by_role("button", name=f"Calm {size}")).to_be_visible()
    expect(page.locator(".composer-actions button.icon").nth(1)).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= SIZES[size]["width"]
    assert errors == []
    context.close()
