"""Plugins and user tools in a real browser: the Plugins page lists the installed plugins
with their grants (both languages), a Quick Reply tool is made in the editor, the model
(a stub speaking OpenAI's wire protocol) calls it, and the chat shows the call and its
result before the reply."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from importlib.resources import files

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import shot
from tests.plugins.install import REPO, write_distribution
from tests.stubs.model_server import Reply, StubServer
from tests.stubs.taverna_server import TavernaServer
from tests.support.served import connect_served

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def plugged(tmp_path_factory: pytest.TempPathFactory, stub: StubServer) -> Iterator[TavernaServer]:
    """`taverna serve` with the test plugins installed (their distribution on its path)."""
    site = write_distribution(tmp_path_factory.mktemp("site"))
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), str(REPO), before) if p)
    try:
        server = TavernaServer(tmp_path_factory.mktemp("plugged") / "data").start()
    finally:
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before
    connect_served(server, stub)
    try:
        yield server
    finally:
        server.stop()


def test_the_plugins_page_lists_each_plugin_with_its_grants(  # type: ignore[no-untyped-def]
    chromium, plugged: TavernaServer
) -> None:
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(plugged.url + "/#/plugins")
    mood = page.locator('li.plugin[data-plugin="mood"]')
    expect(mood).to_contain_text("mood")
    expect(mood.locator('[data-grant="read_chats"]')).to_have_attribute("data-held", "1")
    expect(mood.locator('[data-grant="change_prompts"]')).to_have_attribute("data-held", "1")
    expect(mood.locator('[data-grant="see_keys"]')).to_have_attribute("data-held", "0")
    expect(mood.locator('[data-grant="see_keys"]')).to_contain_text("not granted")
    nosy = page.locator('li.plugin[data-plugin="nosy"]')
    expect(nosy).to_contain_text("Nothing: this plugin declared no grants.")
    expect(nosy.locator('.grant[data-held="1"]')).to_have_count(0)
    broken = page.locator('li.plugin[data-plugin="broken"]')
    expect(broken.locator(".error")).to_contain_text("read_minds")
    shot(page, "desktop-plugins")

    page.locator("#lang-select").select_option("zh-CN")
    expect(page.locator("h1")).to_have_text("插件")
    expect(mood.locator('[data-grant="read_chats"]')).to_contain_text("读取聊天")
    expect(mood.locator('[data-grant="read_chats"]')).to_contain_text("已授权")
    shot(page, "desktop-plugins-zh")
    page.locator("#lang-select").select_option("en")
    assert errors == []
    page.close()

    # on a phone-sized screen the list reads without sideways scrolling
    phone = chromium.new_page(viewport={"width": 390, "height": 844})
    phone.goto(plugged.url + "/#/plugins")
    expect(phone.locator('li.plugin[data-plugin="mood"]')).to_contain_text("Read chats")
    overflow = phone.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    shot(phone, "phone-plugins")
    phone.close()


def test_a_quick_reply_tool_is_called_and_shown_in_the_chat(  # type: ignore[no-untyped-def]
    chromium, plugged: TavernaServer, stub: StubServer
) -> None:
    # the preset turns function calling on
    preset = json.loads(
        (files("taverna") / "data" / "presets" / "Taverna Default.json").read_text()
    )
    preset["function_calling"] = True
    upload = {"file": ("Tools.json", json.dumps(preset).encode(), "application/json")}
    made = plugged.api("POST", "/presets/import?kind=chat", files=upload).json()
    plugged.api("POST", f"/presets/{made['id']}/activate")

    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on(
        "dialog", lambda d: d.accept(prompt_text="Oracle") if d.type == "prompt" else d.accept()
    )

    # The tool, made in the Quick Reply editor.
    page.goto(plugged.url + "/#/quick-replies")
    page.locator("#qr-new").click()
    page.locator("#qr-add").click()
    page.locator(".qr-label").fill("weather")
    page.locator(".qr-message").fill("/pass <b>sunny</b> in {{var::city}}")
    page.locator(".qr-tool summary").click()
    page.locator(".qr-tool-name").fill("weather")
    page.locator(".qr-tool-description").fill("The weather in a city.")
    page.locator(".qr-tool-schema").fill(
        '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}'
    )
    page.locator("#qr-active").check()
    shot(page, "desktop-qr-tool")
    page.locator("#qr-save").click()
    expect(page.locator(".toast").last).to_contain_text("Saved")
    [stored] = [s for s in plugged.api("GET", "/quick-replies").json() if s["name"] == "Oracle"]
    assert stored["replies"][0]["tool"]["parameters"]["required"] == ["city"]

    ione = next(c for c in plugged.api("GET", "/characters").json() if c["name"] == "Ione Calder")
    chat = plugged.api("POST", "/chats", json={"character_id": ione["id"], "title": "Tools"}).json()
    page.goto(f"{plugged.url}/#/chat/{chat['id']}")
    stub.script(
        Reply(tokens=["Let me look."], tool_calls=[("weather", {"city": "Oslo"})]),
        Reply(tokens=["Sunny skies over Oslo."]),
    )
    page.get_by_label("Message", exact=True).fill("What is the weather in Oslo?")
    page.get_by_role("button", name="Send", exact=True).click()
    page.locator("ol.messages > li.message", has_text="Sunny skies over Oslo.").wait_for()
    offered = [t["function"]["name"] for t in stub.requests[-2].body["tools"]]
    assert "weather" in offered and "count_words" in offered  # the reply's and the plugin's
    step = page.locator("ol.messages > li.message.tool-step")
    expect(step).to_have_count(1)
    expect(step.locator(".tool-said")).to_have_text("Let me look.")
    expect(step.locator(".tool-name")).to_have_text('weather({"city": "Oslo"})')
    # the script's result is shown as text: no markup from it reaches the page
    expect(step.locator(".tool-result code")).to_have_text("<b>sunny</b> in Oslo")
    expect(step.locator("b")).to_have_count(0)
    # the model got the result of the call
    assert stub.requests[-1].body["messages"][-1]["content"] == "<b>sunny</b> in Oslo"
    shot(page, "desktop-tool-call")

    # An interceptor (the mood plugin) aborts a reply: the page says so where it would be.
    before = len(stub.requests)
    page.get_by_label("Message", exact=True).fill("Say the FORBIDDEN word")
    page.get_by_role("button", name="Send", exact=True).click()
    failure = page.locator("#failure")
    expect(failure).to_contain_text("A plugin stopped this reply before anything was sent.")
    expect(failure.locator(".failure-detail")).to_contain_text(
        "aborted by plugin 'mood': the last message says a forbidden word"
    )
    expect(page.locator("ol.messages > li.message.user").last).to_contain_text("FORBIDDEN")
    assert len(stub.requests) == before
    shot(page, "desktop-plugin-abort")
    # The inspector shows the next turn as built, and says it would be aborted and by whom.
    page.get_by_role("button", name="Prompt inspector").click()
    note = page.locator("#inspector .prompt-aborted")
    expect(note).to_have_text(
        "This turn would be aborted before anything is sent: plugin 'mood' stops it"
        " (the last message says a forbidden word)."
    )
    page.locator("#inspector [data-tab=ledger]").click()
    expect(note).to_have_count(1)
    page.locator("#close-inspector").click()
    assert errors == []
    page.close()
