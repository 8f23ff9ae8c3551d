"""Quick Replies in a real browser: a set made in the editor, its button above the chat
input runs a script that sets a chat variable, the variable reaches the next prompt, and a
branch from before the click does not have it."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.stubs.model_server import Reply, StubServer

pytestmark = pytest.mark.browser


def wait_idle(page, text: str) -> None:  # type: ignore[no-untyped-def]
    page.locator("ol.messages > li.message:not(.streaming)", has_text=text).first.wait_for(
        timeout=15000
    )
    page.locator("#send").wait_for(state="visible", timeout=15000)
    page.locator("#streaming").wait_for(state="detached", timeout=15000)


def last_prompt(stub: StubServer) -> str:
    return json.dumps(stub.requests[-1].body, ensure_ascii=False)


def test_a_quick_reply_sets_a_variable_for_the_next_prompt_on_its_branch_only(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, stub: StubServer
) -> None:
    ione = next(c for c in taverna.api("GET", "/characters").json() if c["name"] == "Ione Calder")
    chat = taverna.api("POST", "/chats", json={"character_id": ione["id"], "title": "Moods"}).json()
    revision = taverna.api("GET", f"/chats/{chat['id']}").json()["revision"]
    taverna.api(
        "PUT",
        f"/chats/{chat['id']}/authors-note",
        json={"prompt": "[Mood: {{getvar::mood}}.]", "depth": 0, "revision": revision},
    ).raise_for_status()

    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: d.accept(prompt_text="Moods") if d.type == "prompt" else d.accept())

    # Make the set in the editor: one reply, active in every chat.
    page.goto(taverna.url + "/#/quick-replies")
    page.locator("#qr-new").click()
    page.locator("#qr-add").click()
    page.locator(".qr-label").fill("Calm")
    page.locator(".qr-message").fill("/setvar key=mood calm | /echo The mood is {{getvar::mood}}")
    page.locator("#qr-active").check()
    page.locator("#qr-save").click()
    expect(page.locator(".toast").last).to_contain_text("Saved")
    [stored] = [s for s in taverna.api("GET", "/quick-replies").json() if s["name"] == "Moods"]
    assert stored["active"] and stored["replies"][0]["label"] == "Calm"

    # In the chat: a first turn, then the button, then a second turn.
    page.goto(f"{taverna.url}/#/chat/{chat['id']}")
    stub.script(Reply(tokens=["The tide is turning."]))
    page.get_by_label("Message", exact=True).fill("Where are we?")
    page.get_by_role("button", name="Send", exact=True).click()
    wait_idle(page, "The tide is turning.")
    assert "[Mood: .]" in last_prompt(stub)

    button = page.locator(".quick-replies").get_by_role("button", name="Calm")
    button.click()
    expect(page.locator(".toast").last).to_contain_text("The mood is calm")
    shot(page, "desktop-quick-replies")

    stub.script(Reply(tokens=["Then we wait."]))
    page.get_by_label("Message", exact=True).fill("What now?")
    page.get_by_role("button", name="Send", exact=True).click()
    wait_idle(page, "Then we wait.")
    assert "[Mood: calm.]" in last_prompt(stub)

    # A branch from before the click: edit and resend the first question.
    stub.script(Reply(tokens=["Another shore."]))
    question = page.locator("ol.messages > li.message", has_text="Where are we?").first
    question.get_by_role("button", name="Edit and resend").click()
    page.locator(".edit-area").fill("Where else could we be?")
    page.get_by_role("button", name="Save and resend").click()
    wait_idle(page, "Another shore.")
    assert "[Mood: .]" in last_prompt(stub) and "calm" not in last_prompt(stub)

    # A script typed into the input runs too, and its error names the place.
    page.get_by_label("Message", exact=True).fill("/pass a |\n/nosuch")
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.locator(".toast").last).to_contain_text("2:1")
    assert page.get_by_label("Message", exact=True).input_value().startswith("/pass a")
    assert errors == []
    page.close()


def test_chat_variables_are_edited_in_the_chat_settings(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer
) -> None:
    ione = next(c for c in taverna.api("GET", "/characters").json() if c["name"] == "Ione Calder")
    chat = taverna.api("POST", "/chats", json={"character_id": ione["id"], "title": "Vars"}).json()
    page = chromium.new_page(viewport={"width": 375, "height": 812})
    page.goto(f"{taverna.url}/#/chat/{chat['id']}")
    page.get_by_label("Message", exact=True).fill("/setvar key=coins 5")
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.get_by_label("Message", exact=True)).to_have_value("")
    page.get_by_role("button", name="Chat settings").click()
    row = page.locator("#chat-variables li").first
    expect(row.locator(".var-name")).to_have_value("coins")
    expect(row.locator(".var-value")).to_have_value("5")
    row.locator(".var-value").fill("12")
    page.locator("#save-chat-variables").click()
    expect(page.locator(".toast").last).to_contain_text("Saved")
    assert taverna.api("GET", f"/chats/{chat['id']}/variables").json()["local"] == {"coins": "12"}
    page.close()


def test_a_lorebook_entry_runs_its_quick_reply_after_the_reply(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, stub: StubServer
) -> None:
    ione = next(c for c in taverna.api("GET", "/characters").json() if c["name"] == "Ione Calder")
    chat = taverna.api("POST", "/chats", json={"character_id": ione["id"], "title": "Rain"}).json()
    book = taverna.api("POST", "/lorebooks", json={"name": "Rainfall"}).json()
    book = taverna.api("POST", f"/lorebooks/{book['id']}/entries").json()
    entry = {**book["entries"][0], "key": ["umbrella"], "content": "Rain.", "automationId": "rainy"}
    taverna.api("PUT", f"/lorebooks/{book['id']}/entries/{entry['uid']}", json=entry)
    revision = taverna.api("GET", f"/chats/{chat['id']}").json()["revision"]
    taverna.api(
        "PUT",
        f"/chats/{chat['id']}/lorebook",
        json={"lorebook_id": book["id"], "revision": revision},
    ).raise_for_status()
    taverna.api(
        "PUT",
        "/quick-replies",
        json={
            "name": "Weather",
            "active": True,
            "replies": [
                {
                    "label": "Shelter",
                    "message": "/incvar rainy_turns | /echo Shelter taken {{getvar::rainy_turns}}",
                    "hidden": True,
                    "automation_id": "rainy",
                }
            ],
        },
    ).raise_for_status()
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    page.goto(f"{taverna.url}/#/chat/{chat['id']}")
    expect(page.locator(".quick-replies").get_by_role("button", name="Shelter")).to_have_count(0)
    stub.script(Reply(tokens=["Take this."]))
    page.get_by_label("Message", exact=True).fill("Have you an umbrella?")
    page.get_by_role("button", name="Send", exact=True).click()
    wait_idle(page, "Take this.")
    expect(page.locator(".toast").last).to_contain_text("Shelter taken 1")
    variables = taverna.api("GET", f"/chats/{chat['id']}/variables").json()["local"]
    assert variables == {"rainy_turns": 1}
    page.close()


def test_a_sillytavern_set_is_imported_in_the_editor(chromium, taverna: TavernaServer) -> None:  # type: ignore[no-untyped-def]
    from tests.conftest import shared_dir

    path = shared_dir() / "fixtures/sillytavern/handmade/user-data/QuickReplies/Glade Tools.json"
    if not path.exists():
        pytest.skip("the Glade Tools Quick Reply set is not among the fixtures")
    page = chromium.new_page(viewport={"width": 375, "height": 812})
    page.goto(taverna.url + "/#/quick-replies")
    page.locator("#qr-file").set_input_files(str(path))
    expect(page.locator(".toast").last).to_contain_text("Imported Glade Tools")
    page.get_by_role("button", name="Glade Tools").click()
    expect(page.locator(".qr-label").first).to_have_value("Look around")
    expect(page.get_by_role("link", name="Export")).to_be_visible()
    page.close()


def test_quick_replies_run_on_a_new_chat_and_on_opening_it(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer
) -> None:
    taverna.api(
        "POST", "/characters", json={"name": "Nadia Orr", "first_mes": "Welcome aboard."}
    ).raise_for_status()
    taverna.api(
        "PUT",
        "/quick-replies",
        json={
            "name": "Openers",
            "active": True,
            "replies": [
                {
                    "label": "New",
                    "message": "/setvar key=opened new",
                    "hidden": True,
                    "triggers": ["new_chat"],
                },
                {
                    "label": "Visit",
                    "message": "/addvar key=visits 1",
                    "hidden": True,
                    "triggers": ["chat_change"],
                },
            ],
        },
    ).raise_for_status()
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    page.goto(taverna.url + "/#/characters")
    page.get_by_role("button", name="Chat with Nadia Orr").click()
    page.locator("ol.messages > li.message", has_text="Welcome aboard.").wait_for()
    chat_id = page.url.rsplit("/", 1)[1]

    def local() -> dict[str, object]:
        return taverna.api("GET", f"/chats/{chat_id}/variables").json()["local"]  # type: ignore[no-any-return]

    for _ in range(100):
        if local() == {"opened": "new", "visits": 1}:
            break
        page.wait_for_timeout(100)
    assert local() == {"opened": "new", "visits": 1}
    # Opening it again is a chat change, not a new chat.
    page.reload()
    page.locator("ol.messages > li.message", has_text="Welcome aboard.").wait_for()
    for _ in range(100):
        if local().get("visits") == 2:
            break
        page.wait_for_timeout(100)
    assert local() == {"opened": "new", "visits": 2}
    page.close()


def test_a_set_is_shown_or_hidden_everywhere_and_per_chat(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer
) -> None:
    """A set active with its buttons hidden stays active (its replies run by name and on
    their triggers) and shows no button; the switch is kept for every chat and per chat."""
    # No set of the other tests runs on opening the chat (a chat change) meanwhile.
    before = [s["name"] for s in taverna.api("GET", "/quick-replies").json() if s["active"]]
    taverna.api("PUT", "/quick-replies-active", json={"sets": []}).raise_for_status()
    ione = next(c for c in taverna.api("GET", "/characters").json() if c["name"] == "Ione Calder")
    chat = taverna.api("POST", "/chats", json={"character_id": ione["id"], "title": "Lamps"}).json()
    taverna.api(
        "PUT",
        "/quick-replies",
        json={"name": "Bells", "replies": [{"label": "Ring", "message": "/pass ding"}]},
    ).raise_for_status()
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on(
        "dialog", lambda d: d.accept(prompt_text="Lanterns") if d.type == "prompt" else d.accept()
    )

    # Every chat: active, its buttons hidden.
    page.goto(taverna.url + "/#/quick-replies")
    page.locator("#qr-new").click()
    page.locator("#qr-add").click()
    page.locator(".qr-label").fill("Glow")
    page.locator(".qr-message").fill("/pass glow")
    page.locator("#qr-active").check()
    expect(page.locator("#qr-visible")).to_be_checked()
    page.locator("#qr-visible").uncheck()
    page.locator("#qr-save").click()
    expect(page.locator(".toast").last).to_contain_text("Saved")
    [stored] = [s for s in taverna.api("GET", "/quick-replies").json() if s["name"] == "Lanterns"]
    assert stored["active"] and stored["visible"] is False
    expect(page.locator("#qr-visible")).not_to_be_checked()

    page.goto(f"{taverna.url}/#/chat/{chat['id']}")
    page.locator("#send").wait_for()
    bar = page.locator(".quick-replies")
    expect(bar.get_by_role("button", name="Glow")).to_have_count(0)

    # This chat: Bells switched on with its buttons hidden, then shown.
    page.get_by_role("button", name="Chat settings").click()
    choice = page.locator('#chat-qr-sets .qr-choice[data-set="Bells"]')
    choice.locator(".qr-on").check()
    choice.locator(".qr-shown").uncheck()
    page.locator("#chat-qr-sets + button").click()
    expect(page.locator(".toast").last).to_contain_text("Saved")
    found = taverna.api("GET", f"/chats/{chat['id']}/quick-replies").json()
    assert found["chat_sets"] == ["Bells"] and found["chat_visible"] == {"Bells": False}
    assert [r["hidden"] for r in found["replies"] if r["set"] == "Bells"] == [True]
    page.locator("#close-settings").click()
    expect(bar.get_by_role("button", name="Ring")).to_have_count(0)

    page.get_by_role("button", name="Chat settings").click()
    expect(choice.locator(".qr-on")).to_be_checked()
    expect(choice.locator(".qr-shown")).not_to_be_checked()
    choice.locator(".qr-shown").check()
    page.locator("#chat-qr-sets + button").click()
    expect(page.locator(".toast").last).to_contain_text("Saved")
    page.locator("#close-settings").click()
    expect(bar.get_by_role("button", name="Ring")).to_have_count(1)
    expect(bar.get_by_role("button", name="Glow")).to_have_count(0)
    assert errors == []
    page.close()
    # The other tests' sets active again.
    taverna.api("PUT", "/quick-replies-active", json={"sets": before}).raise_for_status()
