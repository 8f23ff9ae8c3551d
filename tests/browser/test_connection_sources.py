"""Connections made from the list of sources by name: OpenRouter and DeepSeek each picked
from the list, shown with their own URL and key hint, a model picked from the list their
API gives (with its context size), then a chat through each, its reasoning kept out of the
reply."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.browser.test_page_small_things import new_chat, open_page
from tests.stubs.model_server import Reply, StubServer

MODELS = ("deepseek-reasoner", "or/large")
pytestmark = [pytest.mark.browser, pytest.mark.stub_model(models=MODELS)]


def add_from_list(page, stub: StubServer, name: str, source: str, url: str, hint: str) -> None:  # type: ignore[no-untyped-def]
    page.locator("#c-name").fill(name)
    page.locator("#c-api").select_option(source)
    expect(page.locator("#c-url")).to_have_attribute("placeholder", url)
    expect(page.locator("#c-key")).to_have_attribute("placeholder", hint)
    # the stub stands in for the service: only this machine is reachable from the tests
    page.locator("#c-url").fill(stub.base_url("openai"))
    page.locator("#connection-form").get_by_role("button", name="Save").click()
    page.locator(".connection", has_text=name).wait_for()


def test_openrouter_and_deepseek_from_the_list_then_a_chat_through_each(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, stub: StubServer
) -> None:
    stub.context_lengths = {"or/large": 200000}
    context, page = open_page(chromium, "en", 1280, 800)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(taverna.url + "/#/connections")
    api = page.locator("#c-api")
    expect(
        api.locator("optgroup[label='Chat Completion'] option", has_text="OpenRouter")
    ).to_have_count(1)
    expect(
        api.locator("optgroup[label='Text Completion'] option", has_text="TabbyAPI")
    ).to_have_count(1)
    expect(api.locator("option", has_text="Window AI")).to_have_count(0)

    add_from_list(page, stub, "router", "openrouter", "https://openrouter.ai/api/v1", "sk-or-…")
    add_from_list(page, stub, "ds", "deepseek", "https://api.deepseek.com/beta", "sk-…")
    for name, model, shown in (
        ("router", "or/large", "or/large · 200000 tokens of context"),
        ("ds", "deepseek-reasoner", "deepseek-reasoner"),
    ):
        item = page.locator(".connection", has_text=name)
        expect(item).to_contain_text("OpenRouter" if name == "router" else "DeepSeek")
        item.get_by_role("button", name="Models").click()
        picker = item.get_by_label("Pick a model")
        expect(picker.locator("option", has_text=shown)).to_have_count(1)
        picker.select_option(model)
        expect(page.locator(".connection", has_text=name)).to_contain_text(model)
    made = {c["name"]: c for c in taverna.api("GET", "/connections").json()}
    assert (made["router"]["source"], made["router"]["model"]) == ("openrouter", "or/large")
    assert (made["ds"]["post_processing"], made["ds"]["model"]) == ("semi", "deepseek-reasoner")
    shot(page, "connections-sources")

    chat_id = new_chat(taverna)
    page.goto(f"{taverna.url}/#/chat/{chat_id}")
    expect(page.locator("ol.messages > li.message").first).to_be_visible()
    for name, field, model in (
        ("router", "reasoning", "or/large"),
        ("ds", "reasoning_content", "deepseek-reasoner"),
    ):
        page.locator("#connection-picker").select_option(name)
        expect(page.locator("#model-picker")).to_have_value(model)
        stub.script(
            Reply(
                tokens=[f"Reply via {name}."], reasoning=["Weighing ", "it."], reasoning_field=field
            )
        )
        asked = len(stub.requests)
        page.locator("#chat-input").fill(f"Hello {name}")
        page.locator("#send").click()
        last = page.locator("ol.messages > li.message").last
        expect(last).to_contain_text(f"Reply via {name}.")
        expect(last.locator(".reasoning-text")).to_have_text("Weighing it.")
        page.locator("#send").wait_for(state="visible")
        sent = stub.requests[asked].body
        assert sent["model"] == model
    # the reasoning is kept apart: the stored replies hold only what was said
    replies = taverna.api("GET", f"/chats/{chat_id}").json()["messages"][-4:]
    said = " ".join(str(m.get("text") or m.get("content") or m.get("mes") or "") for m in replies)
    assert "Reply via router." in said and "Reply via ds." in said
    assert "Weighing" not in said
    assert errors == []
    context.close()
