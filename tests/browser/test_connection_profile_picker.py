"""A connection profile switched to in one choice in the chat's bar: the chat's connection
and model follow it, and the next reply goes there."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.browser.test_page_small_things import new_chat, open_page
from tests.stubs.model_server import Reply, start_stub

pytestmark = pytest.mark.browser


def test_a_profile_switches_the_chats_connection_and_model(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer
) -> None:
    with start_stub(models=("fast-model", "slow-model")) as server:
        made = taverna.api(
            "POST",
            "/connections",
            json={
                "name": "fast",
                "api": "openai",
                "url": server.base_url("openai"),
                "model": "slow-model",
            },
        )
        assert made.status_code == 201, made.text
        kept = taverna.api(
            "PUT",
            "/connection-profiles/Quick",
            json={"connection": "fast", "model": "fast-model", "preset": "Not here"},
        )
        assert kept.status_code == 200, kept.text
        chat_id = new_chat(taverna)
        context, page = open_page(chromium, "en", 1280, 800)
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{taverna.url}/#/chat/{chat_id}")
        expect(page.locator("ol.messages > li.message").first).to_be_visible()
        picker = page.locator("#profile-picker")
        expect(picker).to_be_visible()
        picker.select_option("Quick")
        expect(page.locator("#connection-picker")).to_have_value("fast")
        expect(page.locator("#model-picker")).to_have_value("fast-model")
        # the preset it names is not in the library: said, and left as it was
        expect(page.locator("#profile-note")).to_contain_text("preset")
        shot(page, "connection-profile-switched")
        server.script(Reply(tokens=["Quick answer."]))
        page.locator("#chat-input").fill("Hello")
        page.locator("#send").click()
        expect(page.locator("ol.messages > li.message").last).to_contain_text("Quick answer.")
        assert server.requests[-1].body["model"] == "fast-model"
        assert errors == []
        context.close()
        taverna.api("DELETE", "/connection-profiles/Quick")
        taverna.api("DELETE", "/connections/fast")


def test_a_profile_is_kept_and_removed_on_the_connections_page(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer
) -> None:
    context, page = open_page(chromium, "en", 1280, 900)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{taverna.url}/#/connections")
    form = page.locator("#profile-form")
    expect(form).to_be_visible()
    first = taverna.api("GET", "/connections").json()[0]["name"]
    form.locator("#p-name").fill("Night shift")
    form.locator("#p-connection").select_option(first)
    form.locator("#p-model").fill("night-model")
    form.locator("#p-tokenizer").select_option("llama3")
    form.locator("#p-stops").fill("\\nUser:\nEND")
    form.get_by_role("button", name="Save").click()
    item = page.locator("#profile-list li.profile", has_text="Night shift")
    expect(item).to_contain_text("night-model")
    expect(item).to_contain_text("2 stop strings")
    kept = {p["name"]: p for p in taverna.api("GET", "/connection-profiles").json()}
    assert kept["Night shift"]["stop_strings"] == ["\nUser:", "END"]
    assert kept["Night shift"]["tokenizer"] == "llama3"
    shot(page, "connection-profiles")
    item.get_by_role("button", name="Delete").click()
    expect(page.locator("#profile-list li.profile", has_text="Night shift")).to_have_count(0)
    assert errors == []
    context.close()
