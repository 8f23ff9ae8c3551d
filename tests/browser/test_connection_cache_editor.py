"""A Claude connection's prompt cache switched on in the Connections page's editor."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.browser.test_page_small_things import open_page

pytestmark = pytest.mark.browser


def test_the_editor_sets_claudes_cache_breakpoints(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer
) -> None:
    made = {"name": "sonnet", "api": "claude", "url": "http://127.0.0.1:9/v1", "model": "m"}
    assert taverna.api("POST", "/connections", json=made).status_code == 201
    context, page = open_page(chromium, "en", 1280, 900)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{taverna.url}/#/connections")
    item = page.locator(".connection", has_text="sonnet")
    item.locator("button.edit-connection").click()
    editor = item.locator("form.connection-editor")
    editor.get_by_label("Cache the system prompt (Claude)").check()
    editor.get_by_label("Cache the history at depth (-1: off)").fill("2")
    editor.get_by_role("button", name="Save").click()
    expect(page.locator(".toast").last).to_contain_text("Saved")
    shot(page, "connection-cache-editor")
    shown = next(c for c in taverna.api("GET", "/connections").json() if c["name"] == "sonnet")
    assert (shown["cache_system_prompt"], shown["caching_at_depth"]) == (True, 2)
    assert errors == []
    context.close()
    taverna.api("DELETE", "/connections/sonnet")
