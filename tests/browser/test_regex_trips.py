"""The regex editor's trips: a Find JavaScript cannot read is said at once (beside the field
and in the test box) and saving it is not a plain "Saved"; the test box starts on what the
script is for (a display-only script on "When shown")."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.support.browser import new_page

pytestmark = pytest.mark.browser

CASES = [
    ("desktop", "en", {"width": 1280, "height": 800}, "Saved, but", "Saved"),
    ("phone", "zh-CN", {"width": 375, "height": 812}, "已保存，但", "已保存"),
]


@pytest.mark.parametrize(("size", "lang", "viewport", "warned", "saved"), CASES)
def test_an_unreadable_find_is_said_and_not_saved_as_fine(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, size, lang, viewport, warned, saved
) -> None:
    before = taverna.api("GET", "/regex/global").json()["scripts"]
    context, page, errors = new_page(chromium, viewport, lang)
    try:
        page.goto(taverna.url + "/#/regex")
        page.locator("#regex-new").click()
        page.locator("#regex-name").fill(f"Unclosed {size}")
        page.locator("#regex-find").fill("/(unclosed/g")
        problem = page.locator("#regex-find-problem")
        expect(problem).to_be_visible()
        expect(problem).to_contain_text("JavaScript")
        expect(page.locator("#regex-find")).to_have_attribute("aria-invalid", "true")
        # The test box says it too, even before a text is typed, and after one is.
        result = page.locator("#regex-test-result")
        expect(result).to_have_class("regex-result error")
        page.locator("#regex-test-input").fill("an unclosed door")
        expect(result).to_contain_text("JavaScript")
        shot(page, f"{size}-{lang}-regex-unreadable")
        page.locator("#regex-save").click()
        toast = page.locator(".toast.warning", has_text=warned)
        expect(toast).to_contain_text(f"Unclosed {size}")
        assert page.locator(".toast", has_text=saved).count() == 1  # only the warning's own words
        # Fixed, it reads again and saves as plain "Saved".
        page.locator("#regex-find").fill("/(unclosed)/g")
        expect(page.locator("#regex-find-problem")).to_be_hidden()
        expect(result).not_to_have_class("regex-result error")
        assert errors == []
    finally:
        taverna.api("PUT", "/regex/global", json={"scripts": before})
        context.close()


@pytest.mark.parametrize(("size", "lang", "viewport", "warned", "saved"), CASES)
def test_the_test_box_starts_on_what_the_script_is_for(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, size, lang, viewport, warned, saved
) -> None:
    before = taverna.api("GET", "/regex/global").json()["scripts"]
    base = {"replaceString": "x", "placement": [2], "disabled": False, "promptOnly": False}
    shown = {**base, "scriptName": f"Shown {size}", "findRegex": "/a/g", "markdownOnly": True}
    sent = {**base, "scriptName": f"Sent {size}", "findRegex": "/b/g", "markdownOnly": False}
    sent["promptOnly"] = True
    plain = {**base, "scriptName": f"Stored {size}", "findRegex": "/c/g", "markdownOnly": False}
    taverna.api("PUT", "/regex/global", json={"scripts": [*before, shown, sent, plain]})
    context, page, _ = new_page(chromium, viewport, lang)
    try:
        page.goto(taverna.url + "/#/regex")
        for name, use in [(shown, "display"), (sent, "prompt"), (plain, "store")]:
            page.locator("button.regex-name", has_text=name["scriptName"]).click()
            expect(page.locator("#regex-test-use")).to_have_value(use)
    finally:
        taverna.api("PUT", "/regex/global", json={"scripts": before})
        context.close()
