"""Editing a message from the keyboard: Escape puts it back as it was, Ctrl+Enter saves."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer
from tests.browser.test_chat_flow import DESKTOP, messages

pytestmark = pytest.mark.browser


def test_escape_cancels_and_ctrl_enter_saves_an_edit(chromium, taverna: TavernaServer) -> None:  # type: ignore[no-untyped-def]
    card = taverna.api(
        "POST", "/characters", json={"name": "Keys", "first_mes": "The door is open."}
    ).json()
    chat = taverna.api("POST", "/chats", json={"character_id": card["id"]}).json()
    page = chromium.new_page(viewport=DESKTOP)
    page.goto(f"{taverna.url}/#/chat/{chat['id']}")
    greeting = messages(page).first
    expect(greeting).to_contain_text("The door is open.")

    greeting.get_by_role("button", name="Edit", exact=True).click()
    page.locator(".edit-area").fill("Something else entirely.")
    page.locator(".edit-area").press("Escape")
    expect(page.locator(".edit-area")).to_have_count(0)
    expect(messages(page).first).to_contain_text("The door is open.")

    messages(page).first.get_by_role("button", name="Edit", exact=True).click()
    page.locator(".edit-area").fill("The door is shut.")
    page.locator(".edit-area").press("Control+Enter")
    expect(page.locator(".edit-area")).to_have_count(0)
    expect(messages(page).first).to_contain_text("The door is shut.")
    stored = taverna.api("GET", f"/chats/{chat['id']}").json()["messages"][0]["content"]
    assert stored == "The door is shut."
    page.close()
