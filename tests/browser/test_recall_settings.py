"""Recall's settings in the page, beside the summary in the chat settings: turned on, its
numbers, template and placement changed, the embedding model switched to an
OpenAI-compatible API (whose address and model then show), saved; a bad address refused
with its field named and nothing changed; in English on a desktop and in Chinese on a
phone-sized screen."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.support.browser import SIZES, new_page

pytestmark = pytest.mark.browser

WORDS = {
    "en": {"title": "Recall by meaning", "saved": "Saved", "settings": "Recall settings"},
    "zh-CN": {"title": "按语义回忆", "saved": "已保存", "settings": "回忆设置"},
}


@pytest.mark.parametrize(("size", "lang"), [("desktop", "en"), ("phone", "zh-CN")])
def test_recall_settings_are_changed_in_the_page(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, size: str, lang: str
) -> None:
    characters = taverna.api("GET", "/characters").json()
    ione = next(c for c in characters if c["name"] == "Ione Calder")
    chat = taverna.api("POST", "/chats", json={"character_id": ione["id"]}).json()
    context, page, errors = new_page(chromium, SIZES[size], lang)
    words = WORDS[lang]
    try:
        page.goto(f"{taverna.url}/#/chat/{chat['id']}")
        page.locator("ol.messages > li.message").first.wait_for()
        page.locator("#open-settings").click()
        drawer = page.locator("#chat-settings")
        expect(drawer.get_by_role("heading", name=words["title"])).to_be_visible()
        drawer.locator("details.recall-settings > summary").click()
        expect(drawer.locator("details.recall-settings > summary")).to_have_text(words["settings"])
        # The API's fields show only once the API is chosen.
        expect(drawer.locator("#recall-alt_endpoint_url")).to_be_hidden()
        drawer.locator("#recall-enabled_chats").check()
        drawer.locator("#recall-query").fill("3")
        drawer.locator("#recall-insert").fill("4")
        drawer.locator("#recall-score_threshold").fill("0.4")
        drawer.locator("#recall-budget").fill("300")
        drawer.locator("#recall-template").fill("Earlier:\n{{text}}")
        drawer.locator("#recall-position").select_option("1")
        drawer.locator("#recall-depth").fill("3")
        drawer.locator("#recall-depth_role").select_option("1")
        drawer.locator("#recall-source").select_option("openai")
        expect(drawer.locator("#recall-alt_endpoint_url")).to_be_visible()
        expect(drawer.locator("#recall-api-help")).to_be_visible()
        drawer.locator("#recall-alt_endpoint_url").fill("http://127.0.0.1:9/v1")
        drawer.locator("#recall-openai_model").fill("bge-m3")
        drawer.locator("#recall-settings-save").scroll_into_view_if_needed()
        shot(page, f"recall-settings-{size}-{lang}")
        drawer.locator("#recall-settings-save").click()
        expect(page.locator(".toast").last).to_contain_text(words["saved"])
        saved = taverna.api("GET", "/recall-settings").json()
        assert saved["enabled_chats"] is True
        assert (saved["query"], saved["insert"], saved["budget"]) == (3, 4, 300)
        assert saved["score_threshold"] == pytest.approx(0.4)
        assert saved["template"] == "Earlier:\n{{text}}"
        assert (saved["position"], saved["depth"], saved["depth_role"]) == (1, 3, 1)
        assert saved["source"] == "openai"
        assert saved["alt_endpoint_url"] == "http://127.0.0.1:9/v1"
        assert saved["openai_model"] == "bge-m3"

        # A bad address: refused, its field named, nothing stored.
        drawer.locator("#recall-alt_endpoint_url").fill("ftp://example")
        drawer.locator("#recall-settings-save").click()
        expect(page.locator(".toast").last).to_contain_text("alt_endpoint_url")
        assert taverna.api("GET", "/recall-settings").json() == saved

        # Opened again, the panel shows what is stored.
        page.locator("#close-settings").click()
        page.locator("#open-settings").click()
        drawer.locator("details.recall-settings > summary").click()
        expect(drawer.locator("#recall-query")).to_have_value("3")
        expect(drawer.locator("#recall-source")).to_have_value("openai")
        expect(drawer.locator("#recall-openai_model")).to_have_value("bge-m3")
        assert errors == []
    finally:
        taverna.api(
            "PUT",
            "/recall-settings",
            json={"enabled_chats": False, "source": "transformers", "alt_endpoint_url": ""},
        )
        context.close()


def test_a_person_gives_their_own_key_for_their_endpoint_and_it_is_never_shown(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer
) -> None:
    """The key field shows with the API's address; a key saved is stored (its last
    characters shown as a hint), the field empties, and the key is never in the page
    again; Forget my key removes it."""
    key = "sk-my-own-embeddings-9Z7Q"
    characters = taverna.api("GET", "/characters").json()
    ione = next(c for c in characters if c["name"] == "Ione Calder")
    chat = taverna.api("POST", "/chats", json={"character_id": ione["id"]}).json()
    context = chromium.new_context(viewport=SIZES["desktop"])
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{taverna.url}/#/chat/{chat['id']}")
        page.locator("ol.messages > li.message").first.wait_for()
        page.locator("#open-settings").click()
        drawer = page.locator("#chat-settings")
        drawer.locator("details.recall-settings > summary").click()
        expect(drawer.locator("#recall-api_key")).to_be_hidden()
        drawer.locator("#recall-source").select_option("openai")
        expect(drawer.locator("#recall-api_key")).to_be_visible()
        expect(drawer.locator("#recall-api_key")).to_have_attribute("type", "password")
        drawer.locator("#recall-alt_endpoint_url").fill("http://127.0.0.1:9/v1")
        drawer.locator("#recall-api_key").fill(key)
        drawer.locator("#recall-settings-save").click()
        expect(page.locator(".toast").last).to_contain_text("Saved")
        assert taverna.api("GET", "/recall-settings").json()["api_key_hint"] == "…9Z7Q"
        expect(drawer.locator("#recall-api_key")).to_have_value("")
        expect(drawer.locator("#recall-api_key")).to_have_attribute(
            "placeholder", re.compile("9Z7Q")
        )

        # Saved again without a key: the key stays; opened again: never in the page.
        drawer.locator("#recall-settings-save").click()
        assert taverna.api("GET", "/recall-settings").json()["api_key_hint"] == "…9Z7Q"
        page.reload()
        page.locator("ol.messages > li.message").first.wait_for()
        page.locator("#open-settings").click()
        drawer.locator("details.recall-settings > summary").click()
        expect(drawer.locator("#recall-api_key")).to_have_value("")
        assert key not in page.content()

        drawer.locator("#recall-key-forget").click()
        expect(page.locator(".toast").last).to_contain_text("removed")
        assert taverna.api("GET", "/recall-settings").json()["api_key_hint"] == ""
        assert errors == []
    finally:
        taverna.api(
            "PUT",
            "/recall-settings",
            json={"source": "transformers", "alt_endpoint_url": "", "api_key": ""},
        )
        context.close()
