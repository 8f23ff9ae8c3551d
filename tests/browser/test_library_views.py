"""The library views do what they say: create a character, a persona, edit a lorebook entry,
and reorder and switch prompt-manager slots, each checked through the API afterwards."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot

pytestmark = pytest.mark.browser


def test_create_a_character_with_the_form(chromium, taverna: TavernaServer) -> None:  # type: ignore[no-untyped-def]
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    page.goto(taverna.url + "/#/characters/new")
    page.locator("#f-name").fill("李白")
    page.locator("#f-description").fill("A poet who drinks with the moon.")
    page.get_by_label("Alternate greetings").get_by_role("button", name="Add greeting").click()
    page.locator(".greeting textarea").first.fill("举杯邀明月。")
    page.locator("#f-tags").fill("poet，唐")
    page.locator("#character-form").get_by_role("button", name="Save").click()
    page.get_by_role("heading", name="李白").wait_for()
    found = next(c for c in taverna.api("GET", "/characters").json() if c["name"] == "李白")
    card = taverna.api("GET", f"/characters/{found['id']}").json()
    assert card["description"] == "A poet who drinks with the moon."
    assert card["alternate_greetings"] == ["举杯邀明月。"]
    assert card["tags"] == ["poet", "唐"]
    page.get_by_role("link", name="Export JSON").wait_for()
    page.close()


def test_create_a_persona(chromium, taverna: TavernaServer) -> None:  # type: ignore[no-untyped-def]
    page = chromium.new_page(viewport={"width": 375, "height": 812})
    page.goto(taverna.url + "/#/personas")
    page.get_by_role("button", name="New persona").click()
    page.locator("#persona-name").fill("Wren")
    page.locator("#persona-description").fill("A courier.")
    page.locator("#persona-position").select_option("4")
    page.locator("#persona-is_default").check()
    page.get_by_role("button", name="Save").click()
    page.get_by_role("button", name="Wren (default)").wait_for()
    wren = next(p for p in taverna.api("GET", "/personas").json() if p["name"] == "Wren")
    assert (wren["description"], wren["position"], wren["is_default"]) == ("A courier.", 4, True)
    page.close()


def test_edit_a_lorebook_entry(chromium, taverna: TavernaServer) -> None:  # type: ignore[no-untyped-def]
    book = next(b for b in taverna.api("GET", "/lorebooks").json() if b["name"] == "Brasswater")
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    page.goto(f"{taverna.url}/#/lorebooks/{book['id']}")
    page.get_by_label("Search entries").fill("heron")
    page.locator(".entries li button").first.click()
    page.locator("#e-content").fill("The heron is a boat, 苍鹭.")
    page.locator("#e-key").fill("heron, 苍鹭")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".toast")).to_contain_text("Saved")
    entries = taverna.api("GET", f"/lorebooks/{book['id']}").json()["entries"]
    heron = next(e for e in entries if "苍鹭" in e["key"])
    assert heron["content"] == "The heron is a boat, 苍鹭."
    page.close()


def test_saving_an_untouched_editor_changes_nothing(
    chromium, taverna: TavernaServer, st_fixtures: Path
) -> None:  # type: ignore[no-untyped-def]
    """The form builder reads back what it was given: unset fields stay unset (a card's
    missing nickname, an entry's "use the global setting"), and fields it does not show
    are kept."""
    path = st_fixtures / "presets" / "instruct" / "ChatML.json"
    files = {"file": ("Untouched.json", path.read_bytes(), "application/json")}
    template = taverna.api("POST", "/presets/import?kind=instruct", files=files).json()
    ione = next(c for c in taverna.api("GET", "/characters").json() if c["name"] == "Ione Calder")
    book = next(b for b in taverna.api("GET", "/lorebooks").json() if b["name"] == "Brasswater")

    def state() -> tuple[object, ...]:
        card = taverna.api("GET", f"/characters/{ione['id']}").json()
        entries = taverna.api("GET", f"/lorebooks/{book['id']}").json()["entries"]
        data = taverna.api("GET", f"/presets/{template['id']}").json()["data"]
        card.pop("revision")
        return card, entries, data

    before = state()
    assert before[0]["nickname"] is None
    assert any(e.get("caseSensitive") is None for e in before[1])
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    page.goto(f"{taverna.url}/#/characters/{ione['id']}")
    page.locator("#character-form").get_by_role("button", name="Save").click()
    expect(page.locator(".toast").last).to_contain_text("Saved")
    page.goto(f"{taverna.url}/#/lorebooks/{book['id']}")
    page.locator(".entries li").first.wait_for()
    for row in range(page.locator(".entries li").count()):
        page.locator(".entries li button").nth(row).click()
        with page.expect_response(lambda r: r.request.method == "PUT"):
            page.get_by_role("button", name="Save").click()
    page.goto(f"{taverna.url}/#/presets/{template['id']}")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".toast").last).to_contain_text("Saved")
    assert state() == before
    page.close()


def test_prompt_manager_reorders_and_switches(
    chromium, taverna: TavernaServer, st_fixtures: Path
) -> None:  # type: ignore[no-untyped-def]
    path = st_fixtures / "presets" / "openai" / "Default.json"
    files = {"file": ("Prompt test.json", path.read_bytes(), "application/json")}
    preset = taverna.api("POST", "/presets/import?kind=chat", files=files).json()
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    page.goto(f"{taverna.url}/#/presets/{preset['id']}")
    slots = page.locator(".prompt-order .slot")
    slots.first.wait_for()
    first_two = [
        slots.nth(0).get_attribute("data-identifier"),
        slots.nth(1).get_attribute("data-identifier"),
    ]
    slots.nth(1).get_by_role("button", name="Move up").click()
    page.get_by_label("Enable Main Prompt").uncheck()
    page.locator(".prompt-order .slot", has_text="Main Prompt").get_by_role("button").first.click()
    page.locator("#slot-content").fill("Stay in character, {{char}}.")
    page.get_by_role("button", name="Apply to this slot").click()
    page.locator("#s-temperature").fill("0.7")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".toast").last).to_contain_text("Saved")
    saved = taverna.api("GET", f"/presets/{preset['id']}").json()
    ids = [p["identifier"] for p in saved["prompts"]]
    assert ids[:2] == [first_two[1], first_two[0]]
    main = next(p for p in saved["prompts"] if p["identifier"] == "main")
    assert main["enabled"] is False and main["content"] == "Stay in character, {{char}}."
    assert saved["sampling"]["temperature"] == 0.7
    page.close()


def test_chats_list_renames_and_deletes_and_the_phone_menu_navigates(
    chromium, taverna: TavernaServer
) -> None:  # type: ignore[no-untyped-def]
    ione = next(c for c in taverna.api("GET", "/characters").json() if c["name"] == "Ione Calder")
    keep = taverna.api(
        "POST", "/chats", json={"character_id": ione["id"], "title": "Keep me"}
    ).json()
    drop = taverna.api(
        "POST", "/chats", json={"character_id": ione["id"], "title": "Drop me"}
    ).json()
    page = chromium.new_page(viewport={"width": 375, "height": 812})
    page.on(
        "dialog", lambda d: d.accept(prompt_text="运河之夜") if d.type == "prompt" else d.accept()
    )
    page.goto(taverna.url + "/#/characters")
    menu = page.get_by_role("button", name="Menu")
    menu.click()
    expect(menu).to_have_attribute("aria-expanded", "true")
    page.get_by_role("link", name="Chats").click()
    item = page.locator(".chat-item", has_text="Keep me")
    item.get_by_role("button", name="Rename").click()
    page.locator(".chat-item", has_text="运河之夜").wait_for()
    page.locator(".chat-item", has_text="Drop me").get_by_role("button", name="Delete").click()
    page.locator(".chat-item", has_text="Drop me").wait_for(state="detached")
    titles = {c["id"]: c["title"] for c in taverna.api("GET", "/chats").json()}
    assert titles.get(keep["id"]) == "运河之夜" and drop["id"] not in titles
    page.locator(".chat-item", has_text="运河之夜").get_by_role("button", name="Branches").click()
    page.locator(".chat-item", has_text="运河之夜").locator(".branches li").first.wait_for()
    page.close()


def test_authors_note_from_the_chat_settings(chromium, taverna: TavernaServer) -> None:  # type: ignore[no-untyped-def]
    ione = next(c for c in taverna.api("GET", "/characters").json() if c["name"] == "Ione Calder")
    chat = taverna.api("POST", "/chats", json={"character_id": ione["id"], "title": "Noted"}).json()
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    page.goto(f"{taverna.url}/#/chat/{chat['id']}")
    page.get_by_role("button", name="Chat settings").click()
    page.locator("#an-prompt").fill("[Keep it short.]")
    page.locator("#an-depth").fill("0")
    page.get_by_role("button", name="Save the note").click()
    expect(page.locator(".toast").last).to_contain_text("Saved")
    page.locator("#chat-lorebook").select_option(label="Brasswater")
    page.get_by_role("button", name="Save the lorebook").click()
    # the save is a request of its own: wait for it to be stored before closing
    deadline = time.monotonic() + 30
    while True:
        settings = taverna.api("GET", f"/chats/{chat['id']}/settings").json()
        if settings["lorebook"] == "Brasswater" or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    page.locator("#close-settings").click()
    assert (
        settings["authors_note"]["prompt"] == "[Keep it short.]"
        and settings["lorebook"] == "Brasswater"
    )
    page.get_by_role("button", name="Prompt inspector").click()
    expect(page.locator("#inspector .inspector-body")).to_contain_text("[Keep it short.]")
    page.locator("#close-inspector").click()
    # `/hide 0` in the input box hides the greeting, as in SillyTavern.
    page.get_by_label("Message", exact=True).fill("/hide 0")
    page.get_by_role("button", name="Send", exact=True).click()
    page.locator(".message.hidden-msg").first.wait_for()
    assert taverna.api("GET", f"/chats/{chat['id']}").json()["messages"][0]["hidden"] is True
    page.close()


def test_reasoning_is_shown_folded(chromium, taverna: TavernaServer, stub) -> None:  # type: ignore[no-untyped-def]
    from tests.stubs.model_server import Reply

    ione = next(c for c in taverna.api("GET", "/characters").json() if c["name"] == "Ione Calder")
    chat = taverna.api(
        "POST", "/chats", json={"character_id": ione["id"], "title": "Thinking"}
    ).json()
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    page.goto(f"{taverna.url}/#/chat/{chat['id']}")
    stub.script(
        Reply(reasoning=["Weighing the tide ", "<b>tables</b>."], tokens=["We leave at dawn."])
    )
    page.get_by_label("Message", exact=True).fill("When do we leave?")
    page.get_by_role("button", name="Send", exact=True).click()
    saved = page.locator("li.message:not(.streaming)", has_text="We leave at dawn.")
    saved.wait_for()
    reasoning = saved.locator("details.reasoning")
    expect(reasoning).to_contain_text("Weighing the tide <b>tables</b>.")  # shown as text, not HTML
    assert reasoning.get_attribute("open") is None
    page.close()


def test_the_inspector_lists_the_regexes_a_time_limit_stopped(
    chromium, taverna: TavernaServer
) -> None:  # type: ignore[no-untyped-def]
    import json

    traps = [f"/(a+)+$|q{i}z/" for i in range(30)]
    entries = {
        str(i): {"uid": i, "key": [key], "content": f"trap {i}"} for i, key in enumerate(traps)
    }
    book = taverna.api(
        "POST",
        "/lorebooks/import",
        files={
            "file": ("Traps.json", json.dumps({"entries": entries}).encode(), "application/json")
        },
    ).json()
    card = taverna.api(
        "POST", "/characters", json={"name": "Trapped", "first_mes": "a" * 5000 + "b"}
    ).json()
    taverna.api("PUT", f"/characters/{card['id']}/lorebook", json={"lorebook_id": book["id"]})
    chat = taverna.api("POST", "/chats", json={"character_id": card["id"]}).json()
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    page.goto(f"{taverna.url}/#/chat/{chat['id']}")
    page.get_by_role("button", name="Prompt inspector").click()
    page.get_by_role("tab", name="Ledger").click()
    section = page.locator("#inspector .regex-skipped")
    expect(section).to_contain_text("user regexes were stopped by a time limit this turn")
    expect(section).to_contain_text(traps[0])
    expect(section).to_contain_text("Traps/0")
    shot(page, "desktop-inspector-regexes")
    page.get_by_role("tab", name="Lorebook trace").click()
    expect(page.locator("#inspector .inspector-body")).to_contain_text("stopped by a time limit")
    page.close()
