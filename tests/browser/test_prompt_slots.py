"""The prompt manager adds a custom prompt slot that reaches the prompt, and deletes it again."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot

pytestmark = pytest.mark.browser

CONTENT = "[Rain drums on the lighthouse roof. 灯塔上下着雨。]"


def test_add_a_slot_see_it_in_the_inspector_then_delete_it(
    chromium, taverna: TavernaServer, st_fixtures: Path
) -> None:  # type: ignore[no-untyped-def]
    path = st_fixtures / "presets" / "openai" / "Default.json"
    files = {"file": ("Slots.json", path.read_bytes(), "application/json")}
    preset = taverna.api("POST", "/presets/import?kind=chat", files=files).json()
    taverna.api("POST", f"/presets/{preset['id']}/activate")
    ione = next(c for c in taverna.api("GET", "/characters").json() if c["name"] == "Ione Calder")
    chat = taverna.api("POST", "/chats", json={"character_id": ione["id"]}).json()

    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{taverna.url}/#/presets/{preset['id']}")
    slots = page.locator(".prompt-order .slot")
    slots.first.wait_for()
    # SillyTavern's own slots and the markers have no delete button.
    expect(page.get_by_role("button", name="Delete prompt Main Prompt")).to_have_count(0)
    expect(page.get_by_role("button", name="Delete prompt Chat History")).to_have_count(0)
    count = slots.count()
    page.get_by_role("button", name="New prompt").click()
    page.locator("#slot-name").fill("Weather")
    page.locator("#slot-role").select_option("user")
    page.locator("#slot-position").select_option("1")
    page.locator("#slot-depth").fill("1")
    page.locator("#slot-content").fill(CONTENT)
    shot(page, "prompt-slot-new-desktop")
    page.get_by_role("button", name="Add prompt").click()
    expect(page.locator(".toast").last).to_contain_text("Weather")
    expect(slots).to_have_count(count + 1)
    expect(slots.last).to_contain_text("Weather")
    saved = taverna.api("GET", f"/presets/{preset['id']}").json()["prompts"]
    weather = next(p for p in saved if p["name"] == "Weather")
    assert (weather["role"], weather["injection_position"], weather["injection_depth"]) == (
        "user",
        1,
        1,
    )
    assert weather["content"] == CONTENT and weather["enabled"] is True

    page.goto(f"{taverna.url}/#/chat/{chat['id']}")
    page.locator("#open-inspector").click()
    body = page.locator("#inspector .inspector-body")
    expect(body).to_contain_text(CONTENT)
    # the ledger names the slot as the person named it, never by its identifier
    page.locator("#inspector [data-tab=ledger]").click()
    injection = body.locator("tr[data-kind=injection]")
    expect(injection.filter(has_text="Weather")).to_have_count(1)
    expect(body).not_to_contain_text(weather["identifier"])
    page.locator("#close-inspector").click()

    # the same on a Chinese page
    page.evaluate("localStorage.setItem('taverna.lang', 'zh-CN')")
    page.reload()
    page.locator("#open-inspector").click()
    expect(body).to_contain_text(CONTENT)
    page.locator("#inspector [data-tab=ledger]").click()
    expect(injection.filter(has_text="Weather")).to_have_count(1)
    expect(body).not_to_contain_text(weather["identifier"])
    shot(page, "prompt-slot-inspector-zh")
    page.locator("#close-inspector").click()
    page.evaluate("localStorage.setItem('taverna.lang', 'en')")
    page.reload()

    page.set_viewport_size({"width": 375, "height": 812})
    page.goto(f"{taverna.url}/#/presets/{preset['id']}")
    slots.first.wait_for()
    delete = page.get_by_role("button", name="Delete prompt Weather")
    delete.scroll_into_view_if_needed()
    shot(page, "prompt-slot-phone")
    page.once("dialog", lambda d: d.accept())
    delete.click()
    expect(slots).to_have_count(count)
    after = taverna.api("GET", f"/presets/{preset['id']}").json()["prompts"]
    assert not any(p["name"] == "Weather" for p in after)
    page.goto(f"{taverna.url}/#/chat/{chat['id']}")
    page.locator("#open-inspector").click()
    expect(page.locator("#inspector .inspector-body")).to_contain_text("Ione")
    expect(page.locator("#inspector .inspector-body")).not_to_contain_text("Rain drums")
    assert errors == []
    page.close()
