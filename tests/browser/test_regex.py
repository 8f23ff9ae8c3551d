"""Regex scripts in a real browser: scripts made in the editor with the live test box, one
imported from a SillyTavern file, then a chat where a storage script rewrites the sent
message (and the prompt) while a display-only one changes what is shown, never the store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.browser.test_pages import UNNAMED
from tests.browser.test_quick_replies import last_prompt, wait_idle
from tests.stubs.model_server import Reply, StubServer

pytestmark = pytest.mark.browser


def test_scripts_made_in_the_page_shape_stored_shown_and_sent_text(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, stub: StubServer, tmp_path: Path
) -> None:
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: d.accept())
    page.goto(taverna.url + "/#/regex")
    expect(page.locator("#regex-list")).to_contain_text("No scripts here yet.")

    # A display-only script, tried in the test box as it is typed.
    page.locator("#regex-new").click()
    page.locator("#regex-name").fill("Hide stars")
    page.locator("#regex-find").fill("/\\*/g")
    page.locator("#regex-markdown-only").check()
    page.locator("#regex-test-use").select_option("display")
    page.locator("#regex-test-input").fill("Hello *there*")
    expect(page.locator("#regex-test-result")).to_have_text("Hello there")
    page.locator("#regex-test-use").select_option("store")
    expect(page.locator("#regex-test-result")).to_have_text("Hello *there*")
    page.locator("#regex-save").click()
    expect(page.locator(".toast").last).to_contain_text("Saved")

    # A storage script from a SillyTavern export file.
    exported = {
        "id": "8c2f6a0e-5d1b-4c7a-9e3f-0b4d2a6c8e17", "scriptName": "Strip OOC notes",
        "findRegex": "/\\s*\\(OOC:[^)]*\\)/gi", "replaceString": "", "trimStrings": [],
        "placement": [1, 2], "disabled": False, "markdownOnly": False, "promptOnly": False,
        "runOnEdit": True, "substituteRegex": False, "minDepth": None, "maxDepth": None,
    }  # fmt: skip
    file = tmp_path / "strip_ooc_notes.json"
    file.write_text(json.dumps(exported, indent=4))
    page.locator("#regex-file").set_input_files(str(file))
    expect(page.locator("#regex-list")).to_contain_text("Strip OOC notes")
    page.locator(".regex-name", has_text="Strip OOC notes").click()
    page.locator("#regex-test-input").fill("Hi (OOC: be brief) there")
    expect(page.locator("#regex-test-result")).to_have_text("Hi there")
    assert page.evaluate(UNNAMED) == []
    page.locator("main .page-head h1").scroll_into_view_if_needed()
    shot(page, "desktop-en-regex")
    stored = taverna.api("GET", "/regex/global").json()["scripts"]
    assert [s["scriptName"] for s in stored] == ["Hide stars", "Strip OOC notes"]

    # In a chat: the storage script rewrites the sent text, the display one only the page.
    ione = next(c for c in taverna.api("GET", "/characters").json() if c["name"] == "Ione Calder")
    chat = taverna.api("POST", "/chats", json={"character_id": ione["id"], "title": "Rx"}).json()
    page.goto(f"{taverna.url}/#/chat/{chat['id']}")
    stub.script(Reply(tokens=["A *quiet* harbour."]))
    page.get_by_label("Message", exact=True).fill("Where are we? (OOC: keep it short)")
    page.get_by_role("button", name="Send", exact=True).click()
    wait_idle(page, "A quiet harbour.")
    assert "OOC" not in last_prompt(stub) and "Where are we?" in last_prompt(stub)
    messages = page.locator("ol.messages > li.message")
    expect(messages.last.locator(".content")).to_have_text("A quiet harbour.")
    expect(page.locator("ol.messages")).not_to_contain_text("OOC")
    view = taverna.api("GET", f"/chats/{chat['id']}").json()
    user, reply = view["messages"][-2], view["messages"][-1]
    assert user["content"] == "Where are we?"
    assert reply["content"] == "A *quiet* harbour." and reply["shown"] == "A quiet harbour."
    # Editing shows the stored text, stars included.
    messages.last.get_by_role("button", name="Edit", exact=True).click()
    expect(page.locator(".edit-area")).to_have_value("A *quiet* harbour.")
    page.keyboard.press("Escape")
    shot(page, "desktop-en-regex-chat")

    # The editor in Chinese, and on a phone.
    page.goto(taverna.url + "/#/characters")
    page.locator("#lang-select").select_option("zh-CN")
    page.goto(taverna.url + "/#/regex")
    expect(page.locator("main .page-head h1")).to_have_text("正则")
    page.locator(".regex-name", has_text="Hide stars").click()
    page.locator("#regex-test-use").select_option("display")
    page.locator("#regex-test-input").fill("*你好*")
    expect(page.locator("#regex-test-result")).to_have_text("你好")
    assert page.evaluate(UNNAMED) == []
    shot(page, "desktop-zh-CN-regex")
    page.set_viewport_size({"width": 375, "height": 812})
    page.locator("#regex-layer").select_option("character")
    expect(page.locator("#regex-allowed")).to_be_visible()
    shot(page, "phone-zh-CN-regex")
    page.goto(taverna.url + "/#/characters")
    page.locator("#lang-select").select_option("en")
    assert errors == []
    page.close()


def test_a_cards_own_scripts_run_once_the_person_allows_them(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer
) -> None:
    script = {"scriptName": "Shout moon", "findRegex": "/moon/g", "replaceString": "MOON",
              "placement": [2], "markdownOnly": True}  # fmt: skip
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {
        "name": "Selene", "first_mes": "The moon is up.",
        "extensions": {"regex_scripts": [script]}}}  # fmt: skip
    made = taverna.api(
        "POST",
        "/characters/import",
        files={"file": ("Selene.json", json.dumps(card).encode(), "application/json")},
    ).json()
    chat = taverna.api("POST", "/chats", json={"character_id": made["id"], "title": "Moon"}).json()
    page = chromium.new_page(viewport={"width": 375, "height": 812})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{taverna.url}/#/chat/{chat['id']}")
    notice = page.locator("#regex-consent")
    expect(notice).to_contain_text("Selene brings 1 regex script")
    first = page.locator("ol.messages > li.message").first.locator(".content")
    expect(first).to_have_text("The moon is up.")  # not allowed yet: not run
    shot(page, "phone-en-regex-consent")
    page.locator("#regex-consent-allow").click()
    expect(notice).to_be_hidden()
    expect(first).to_have_text("The MOON is up.")
    layer = taverna.api("GET", "/regex/character", params={"target": made["id"]}).json()
    assert layer["allowed"] is True
    # Asked once: the chat opened again asks no more.
    page.reload()
    page.locator("ol.messages > li.message").first.wait_for()
    expect(notice).to_be_hidden()
    assert errors == []
    page.close()


def test_a_display_script_on_reasoning_changes_the_reasoning_shown(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, stub: StubServer
) -> None:
    before = taverna.api("GET", "/regex/global").json()["scripts"]
    veil = {
        "scriptName": "Veil the plan", "findRegex": "/plan/g", "replaceString": "[…]",
        "placement": [6], "markdownOnly": True,
    }  # fmt: skip
    taverna.api("PUT", "/regex/global", json={"scripts": [*before, veil]})
    try:
        ione = next(
            c for c in taverna.api("GET", "/characters").json() if c["name"] == "Ione Calder"
        )
        chat = taverna.api("POST", "/chats", json={"character_id": ione["id"]}).json()
        page = chromium.new_page(viewport={"width": 1280, "height": 800})
        page.goto(f"{taverna.url}/#/chat/{chat['id']}")
        stub.script(Reply(reasoning=["The plan: sail ", "at dawn."], tokens=["Our plan holds."]))
        page.get_by_label("Message", exact=True).fill("What now?")
        page.get_by_role("button", name="Send", exact=True).click()
        saved = page.locator("li.message:not(.streaming)", has_text="Our plan holds.")
        saved.wait_for()
        expect(saved.locator("details.reasoning .reasoning-text")).to_have_text(
            "The […]: sail at dawn."
        )
        expect(saved.locator(".content")).to_have_text("Our plan holds.")  # text left alone
        reply = taverna.api("GET", f"/chats/{chat['id']}").json()["messages"][-1]
        assert reply["generation"]["extras"]["reasoning"] == "The plan: sail at dawn."
        page.close()
    finally:
        taverna.api("PUT", "/regex/global", json={"scripts": before})


def test_a_text_completion_preset_is_chosen_and_its_scripts_allowed_in_the_page(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer
) -> None:
    story = {
        "temp": 0.7, "rep_pen": 1.1,
        "extensions": {"regex_scripts": [{"scriptName": "Tidy", "findRegex": "/ +/g",
                                          "replaceString": " ", "placement": [2]}]},
    }  # fmt: skip
    made = taverna.api(
        "POST",
        "/presets/import?kind=text",
        files={"file": ("Story Mode.json", json.dumps(story).encode(), "application/json")},
    ).json()
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(taverna.url + "/#/presets")
    expect(page.locator("main h2", has_text="Text completion presets")).to_be_visible()
    row = page.locator("main li", has_text="Story Mode")
    row.get_by_role("button", name="Use").click()
    expect(row.locator(".badge")).to_be_visible()
    page.goto(taverna.url + "/#/regex")
    page.locator("#regex-layer").select_option("preset")
    group = page.locator("#regex-target optgroup[label='Text Completion presets']")
    expect(group.locator("option", has_text="Story Mode")).to_have_count(1)
    page.locator("#regex-target").select_option(made["id"])
    expect(page.locator("#regex-list")).to_contain_text("Tidy")
    with page.expect_response(lambda r: "/api/regex/" in r.url and r.request.method != "GET"):
        page.locator("#regex-allowed").check()
    expect(page.locator("#regex-allowed")).to_be_checked()
    layer = taverna.api("GET", "/regex/preset", params={"target": made["id"]}).json()
    assert layer["allowed"] is True
    assert errors == []
    page.close()


def test_the_test_box_says_a_script_ran_to_its_time_limit(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer
) -> None:
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(taverna.url + "/#/regex")
    page.locator("#regex-new").click()
    page.locator("#regex-name").fill("Runaway")
    page.locator("#regex-find").fill("/(a+)+$|q{}z/g")
    page.locator("#regex-test-input").fill("a" * 5000 + "b")
    expect(page.locator("#regex-test-stopped")).to_contain_text("250 ms limit")
    expect(page.locator("#regex-test-result")).to_have_text("a" * 5000 + "b")
    page.locator("#regex-test-input").fill("a quiet harbour")
    expect(page.locator("#regex-test-stopped")).to_be_hidden()
    shot(page, "desktop-en-regex-stopped")
    assert errors == []
    page.close()
