"""Editing a message from the keyboard: Escape puts it back as it was, Ctrl+Enter saves.
Desktop in English, phone in Chinese."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.browser.test_chat_flow import messages
from tests.browser.test_page_small_things import CASES, catalog, open_page

pytestmark = pytest.mark.browser


@pytest.mark.parametrize(("size", "lang", "width", "height"), CASES)
def test_escape_cancels_and_ctrl_enter_saves_an_edit(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, size: str, lang: str, width: int, height: int
) -> None:
    edit = catalog(lang)["chat.edit"]
    card = taverna.api(
        "POST", "/characters", json={"name": f"Keys {size}", "first_mes": "The door is open."}
    ).json()
    chat = taverna.api("POST", "/chats", json={"character_id": card["id"]}).json()
    context, page = open_page(chromium, lang, width, height)
    page.goto(f"{taverna.url}/#/chat/{chat['id']}")
    greeting = messages(page).first
    expect(greeting).to_contain_text("The door is open.")

    greeting.get_by_role("button", name=edit, exact=True).click()
    page.locator(".edit-area").fill("Something else entirely.")
    shot(page, f"{size}-{lang}-edit-open")
    page.locator(".edit-area").press("Escape")
    expect(page.locator(".edit-area")).to_have_count(0)
    expect(messages(page).first).to_contain_text("The door is open.")

    messages(page).first.get_by_role("button", name=edit, exact=True).click()
    page.locator(".edit-area").fill("The door is shut.")
    page.locator(".edit-area").press("Control+Enter")
    expect(page.locator(".edit-area")).to_have_count(0)
    expect(messages(page).first).to_contain_text("The door is shut.")
    stored = taverna.api("GET", f"/chats/{chat['id']}").json()["messages"][0]["content"]
    assert stored == "The door is shut."
    context.close()
