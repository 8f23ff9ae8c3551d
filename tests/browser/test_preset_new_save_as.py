"""New and Save as for presets and templates: a new one starts from the product's own
defaults; Save as stores the one open, with its unsaved edits, under a new name and leaves
the original as it was. Both languages, both sizes."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import shot
from tests.stubs.taverna_server import TavernaServer
from tests.support.browser import SIZES, new_page

pytestmark = pytest.mark.browser


def named(server: TavernaServer, kind: str, name: str) -> dict[str, object]:
    found = [p for p in server.api("GET", f"/presets?kind={kind}").json() if p["name"] == name]
    assert len(found) == 1, found
    return server.api("GET", f"/presets/{found[0]['id']}").json()  # type: ignore[no-any-return]


@pytest.mark.parametrize(("size", "lang"), [("desktop", "en"), ("phone", "zh-CN")])
def test_new_preset_and_save_as(
    chromium,  # type: ignore[no-untyped-def]
    fresh: TavernaServer,
    size: str,
    lang: str,
) -> None:
    context, page, errors = new_page(chromium, SIZES[size], lang)
    page.goto(f"{fresh.url}/#/presets")
    mine = f"Mine {size}"
    page.locator("#new-preset-name").fill(mine)
    page.locator("form.new-preset button[type=submit]").click()
    expect(page.locator("main h1")).to_have_text(mine)
    expect(page.locator("main .prompt-order li").first).to_be_visible()
    shot(page, f"{size}-{lang}-preset-new")
    assert named(fresh, "chat", mine)["sampling"]["temperature"] == 0.9  # type: ignore[index]

    # An unsaved edit goes into the copy, not into the preset open.
    page.locator("#s-temperature").fill("0.4")
    page.locator("#save-as-name").fill(f"{mine} B")
    page.locator("form.save-as button[type=submit]").click()
    expect(page.locator("main h1")).to_have_text(f"{mine} B")
    expect(page.locator("#s-temperature")).to_have_value("0.4")
    shot(page, f"{size}-{lang}-preset-saved-as")
    assert named(fresh, "chat", f"{mine} B")["sampling"]["temperature"] == 0.4  # type: ignore[index]
    assert named(fresh, "chat", mine)["sampling"]["temperature"] == 0.9  # type: ignore[index]

    # A name taken is refused in words, and nothing is replaced.
    page.locator("#save-as-name").fill(mine)
    page.locator("form.save-as button[type=submit]").click()
    refused = page.locator(".toast.error").last
    expect(refused).to_contain_text(mine)
    if lang != "en":
        expect(refused).not_to_contain_text("exists already")
    expect(page.locator("main h1")).to_have_text(f"{mine} B")

    # Templates: a new context template from the defaults, then saved as another.
    page.goto(f"{fresh.url}/#/templates")
    page.locator("main select").first.select_option("context")
    page.locator("#new-preset-name").fill(f"Story {size}")
    page.locator("form.new-preset button[type=submit]").click()
    expect(page.locator("main h1")).to_have_text(f"Story {size}")
    shot(page, f"{size}-{lang}-template-new")
    page.locator("#save-as-name").fill(f"Story {size} B")
    page.locator("form.save-as button[type=submit]").click()
    expect(page.locator("main h1")).to_have_text(f"Story {size} B")
    assert named(fresh, "context", f"Story {size} B")["data"]["name"] == f"Story {size} B"  # type: ignore[index]
    assert errors == []
    context.close()
