"""The chat's turn bar: the typed text's tokens counted by the server as the person types,
and the persona, connection and model of the next turn chosen right by the input."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.browser.test_page_small_things import CASES, catalog, new_chat, open_page, say
from tests.stubs.model_server import Reply, StubServer, start_stub

pytestmark = pytest.mark.browser

MODELS = ("wide-model", "narrow-model")


@pytest.fixture(scope="module")
def other(taverna: TavernaServer) -> Iterator[StubServer]:
    """A second model server, listing two models, behind a connection that is not the default."""
    with start_stub(models=MODELS) as server:
        made = taverna.api(
            "POST",
            "/connections",
            json={
                "name": "other",
                "api": "openai",
                "url": server.base_url("openai"),
                "model": MODELS[0],
            },
        )
        assert made.status_code == 201, made.text
        for name in ("Ann", "Bo"):
            taverna.api("POST", "/personas", json={"name": name, "is_default": name == "Ann"})
        yield server


@pytest.mark.parametrize(("size", "lang", "width", "height"), CASES)
def test_token_count_persona_and_connection_by_the_input(  # type: ignore[no-untyped-def]
    chromium,
    taverna: TavernaServer,
    other: StubServer,
    size: str,
    lang: str,
    width: int,
    height: int,
) -> None:
    words = catalog(lang)
    chat_id = new_chat(taverna)
    context, page = open_page(chromium, lang, width, height)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{taverna.url}/#/chat/{chat_id}")
    expect(page.locator("ol.messages > li.message").first).to_be_visible()

    # The count: what the server counts with the chat's tokenizer, shown as the person types.
    text = "The lighthouse keeper counts the ships that pass at night."
    page.locator("#chat-input").fill(text)
    counted = taverna.api("POST", f"/chats/{chat_id}/tokens", json={"text": text}).json()
    assert counted["tokens"] > 5
    expect(page.locator("#token-count")).to_have_text(
        say(words, "chat.tokens", n=counted["tokens"], total=counted["prompt_tokens"])
    )

    # The persona: the chat speaks as Bo from now on.
    page.locator("#persona-picker").select_option(label="Bo")
    expect(page.locator("#persona-picker")).to_have_value(re.compile(".+"))
    page.wait_for_function(
        "() => document.querySelector('#persona-picker').selectedOptions[0].text === 'Bo'"
    )
    seen = None
    for _ in range(50):
        seen = taverna.api("GET", f"/chats/{chat_id}").json()
        if seen["persona"]["name"] == "Bo":
            break
        page.wait_for_timeout(100)
    assert seen is not None and seen["persona"]["name"] == "Bo"

    # The connection and its model, from the model list its API gives: the chat's own
    # choice, kept with the chat; the connection itself and the default stay as they were.
    page.locator("#connection-picker").select_option("other")
    model = page.locator("#model-picker")
    expect(model.locator("option")).to_have_count(len(MODELS))
    wanted = MODELS[1]
    model.select_option(wanted)
    chosen = None
    for _ in range(50):
        chosen = taverna.api("GET", f"/chats/{chat_id}").json()["connection"]
        if chosen == {"name": "other", "model": wanted}:
            break
        page.wait_for_timeout(100)
    assert chosen == {"name": "other", "model": wanted}
    listed = {c["name"]: c for c in taverna.api("GET", "/connections").json()}
    assert listed["other"]["model"] == MODELS[0] and not listed["other"]["default"]
    shot(page, f"chat-pickers-{size}-{lang}")

    # Nothing wider than the screen, the bar included.
    widest = page.evaluate(
        "() => Math.max(...[...document.querySelectorAll('#turn-bar, #turn-bar *')]"
        ".map((e) => e.getBoundingClientRect().right))"
    )
    assert widest <= width, widest
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width

    # The next turn goes to the chosen connection, with the chosen model, as Bo.
    other.script(Reply(tokens=["Aye, ", "Bo."]))
    asked = len(other.requests)
    page.locator("#send").click()
    expect(page.locator("ol.messages > li.message").last).to_contain_text("Aye, Bo.")
    assert len(other.requests) == asked + 1
    assert other.requests[-1].body["model"] == wanted
    expect(page.locator("#chat-input")).to_have_value("")

    # After a reload the chat keeps its connection and model; a new chat has the default.
    page.reload()
    expect(page.locator("#connection-picker")).to_have_value("other")
    expect(page.locator("#model-picker")).to_have_value(wanted)
    expect(page.locator("#persona-picker option:checked")).to_have_text("Bo")
    fresh = new_chat(taverna)
    page.goto(f"{taverna.url}/#/chat/{fresh}")
    default = next(c["name"] for c in listed.values() if c["default"])
    expect(page.locator("#connection-picker")).to_have_value(default)
    assert not errors, errors
    context.close()
