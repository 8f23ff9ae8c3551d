"""A new data folder: the presets and templates pages have the project's own presets and
templates to open, and the Chat Completion preset is the one in use. Both languages."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import shot
from tests.stubs.taverna_server import TavernaServer
from tests.support.browser import SIZES, new_page


@pytest.mark.parametrize(("size", "lang"), [("desktop", "en"), ("phone", "zh-CN")])
def test_a_new_data_folder_has_presets_and_templates_to_open(
    chromium,  # type: ignore[no-untyped-def]
    fresh: TavernaServer,
    size: str,
    lang: str,
) -> None:
    context, page, errors = new_page(chromium, SIZES[size], lang)
    page.goto(f"{fresh.url}/#/presets")
    preset = page.locator("main li", has_text="Taverna Default")
    expect(preset).to_be_visible()
    expect(preset.locator(".badge")).to_be_visible()  # the one in use
    shot(page, f"{size}-{lang}-first-start-presets")
    preset.get_by_role("link", name="Taverna Default").click()
    # SillyTavern's own slot under its name in the page's language
    expect(page.locator("main")).to_contain_text("Main Prompt" if lang == "en" else "主提示词")
    shot(page, f"{size}-{lang}-first-start-preset-open")

    page.goto(f"{fresh.url}/#/templates")
    for name in ("ChatML", "Llama 3 Instruct", "Mistral", "Taverna Story"):
        expect(page.locator("main li", has_text=name)).to_be_visible()
    shot(page, f"{size}-{lang}-first-start-templates")
    page.locator("main li", has_text="ChatML").get_by_role("link", name="ChatML").click()
    # The list page has inputs of its own: wait for the editor's field, not for any field.
    page.wait_for_function(
        """(want) => [...document.querySelectorAll('main textarea, main input')]
            .some((el) => el.value === want)""",
        arg="<|im_start|>user\n",
        timeout=15_000,
    )
    expect(page.locator("#save-as-name")).to_be_attached()
    # The system prompt is a template kind of its own, on the same page.
    templates = fresh.api("GET", "/presets?kind=sysprompt").json()
    assert [t["name"] for t in templates] == ["Taverna Roleplay"]
    assert errors == []
    context.close()
