"""Completion in the chat input, as SillyTavern's: command names with their aliases and help,
a command's named arguments, and the variable names a script set earlier; on a desktop in
English and on a phone in Chinese."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.support.browser import catalog, new_page

pytestmark = pytest.mark.browser


def _chat(taverna: TavernaServer, title: str) -> str:
    character = taverna.api(
        "POST", "/characters", json={"name": f"Wren {title}", "first_mes": "Hi."}
    ).json()
    chat = taverna.api("POST", "/chats", json={"character_id": character["id"], "title": title})
    return str(chat.json()["id"])


def _wait_variable(taverna: TavernaServer, chat_id: str, name: str) -> None:
    for _ in range(100):
        if name in taverna.api("GET", f"/chats/{chat_id}/variables").json()["local"]:
            return
        time.sleep(0.1)
    raise AssertionError(f"the script did not set {name}")


@pytest.mark.parametrize(
    ("viewport", "lang"),
    [({"width": 1280, "height": 800}, "en"), ({"width": 375, "height": 812}, "zh-CN")],
    ids=["desktop-en", "phone-zh"],
)
def test_commands_arguments_and_variables_complete(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, viewport: dict[str, int], lang: str
) -> None:
    chat_id = _chat(taverna, f"Completion {lang}")
    context, page, errors = new_page(chromium, viewport, lang)
    page.goto(f"{taverna.url}/#/chat/{chat_id}")
    box = page.locator("#chat-input")
    listed = page.locator("#script-complete")
    names = listed.locator(".complete-name")

    # A script run from the input sets a variable the completion offers later.
    box.fill("/setvar key=weather_today rain")
    page.locator("#send").click()
    _wait_variable(taverna, chat_id, "weather_today")

    box.fill("")
    box.press_sequentially("/se")
    expect(listed).to_be_visible()
    shown = names.all_inner_texts()
    assert {"/send", "/sendas", "/setvar", "/setglobalvar"} <= set(shown), shown
    assert all(name.startswith("/se") for name in shown), shown
    sendas = listed.locator("li", has=page.locator(".complete-name", has_text="/sendas"))
    expect(sendas.locator(".complete-help")).not_to_be_empty()
    setvar = listed.locator("li", has=page.locator(".complete-name", has_text="/setvar"))
    expect(setvar.locator(".complete-aliases")).to_contain_text("/setchatvar")
    shot(page, f"script-complete-commands-{lang}")

    # Arrow keys move the choice; Escape closes; typing on narrows it.
    expect(listed.locator("li.chosen .complete-name")).to_have_text(shown[0])
    box.press("ArrowDown")
    expect(listed.locator("li.chosen .complete-name")).to_have_text(shown[1])
    box.press("Escape")
    expect(listed).to_be_hidden()
    box.press_sequentially("tv")
    expect(listed.locator("li.chosen .complete-name")).to_have_text("/setvar")
    box.press("Tab")
    expect(box).to_have_value("/setvar ")
    expect(box).to_be_focused()

    # A word after the command offers its named arguments; then the variables for key=.
    box.press_sequentially("ke")
    expect(names).to_have_text(["key="])
    box.press("Tab")
    expect(box).to_have_value("/setvar key=")
    expect(listed).to_be_visible()
    variable = listed.locator("li", has=page.locator(".complete-name", has_text="weather_today"))
    expect(variable.locator(".complete-help")).to_have_text(catalog(lang)["complete.chat_variable"])
    box.press_sequentially("wea")
    shot(page, f"script-complete-variables-{lang}")
    box.press("Enter")  # takes the name; does not send
    expect(box).to_have_value("/setvar key=weather_today")
    expect(listed).to_be_hidden()

    # Inside {{getvar:: the names too, closed by }}; a tap takes one.
    box.fill("/echo {{getvar::")
    box.press_sequentially("w")
    variable.click()
    expect(box).to_have_value("/echo {{getvar::weather_today}}")

    # Text that is not a script offers nothing.
    box.fill("")
    box.press_sequentially("hello /se")
    expect(listed).to_be_hidden()
    assert errors == []
    context.close()


def test_setinput_fills_the_input_box(chromium, taverna: TavernaServer) -> None:  # type: ignore[no-untyped-def]
    """`/setinput` typed in the chat input leaves its text there, as SillyTavern's does."""
    chat_id = _chat(taverna, "Setinput")
    context, page, errors = new_page(chromium, {"width": 1280, "height": 800}, "en")
    page.goto(f"{taverna.url}/#/chat/{chat_id}")
    box = page.locator("#chat-input")
    box.fill("/setinput Ready when you are. | /setvar key=done yes")
    page.locator("#send").click()
    _wait_variable(taverna, chat_id, "done")
    expect(box).to_have_value("Ready when you are.")
    shot(page, "setinput-fills-the-box")
    assert errors == []
    context.close()
