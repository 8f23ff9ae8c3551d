"""A failed reply is told on the spot, with its cause in words and a Retry that answers;
with no model connected, the chat itself asks for the first connection. Both sizes, both
languages."""

from __future__ import annotations

import socket

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import shot
from tests.stubs.model_server import Reply, StubServer
from tests.stubs.taverna_server import TavernaServer
from tests.support.browser import SIZES, new_page
from tests.support.served import connect_served

# (size, language, HTTP status the model API answers, words the page must use for it)
FAILURES = [
    ("desktop", "en", 401, "refused the key"),
    ("phone", "en", 429, "too many requests"),
    ("desktop", "zh-CN", 500, "模型 API 自身出错"),
    ("phone", "zh-CN", 404, "找不到这个模型或地址"),
]
RETRY = {"en": "Retry", "zh-CN": "重试"}


def open_chat(chromium, server: TavernaServer, size: str, lang: str):  # type: ignore[no-untyped-def]
    character = server.api("GET", "/characters").json()[0]
    chat = server.api("POST", "/chats", json={"character_id": character["id"]}).json()
    context, page, errors = new_page(chromium, SIZES[size], lang)
    page.goto(f"{server.url}/#/chat/{chat['id']}")
    page.locator("ol.messages .message").first.wait_for()
    return context, page, chat, errors


def fits_the_screen(page) -> None:  # type: ignore[no-untyped-def]
    wide = page.evaluate(
        "() => [...document.querySelectorAll('#failure, #first-connection, #first-connection *')]"
        ".filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1)"
        ".map((el) => el.tagName + '.' + el.className)"
    )
    assert wide == []


@pytest.mark.parametrize(("size", "lang", "status", "words"), FAILURES)
def test_a_failed_reply_says_why_where_it_failed_and_retry_answers(
    chromium,  # type: ignore[no-untyped-def]
    taverna: TavernaServer,
    stub: StubServer,
    size: str,
    lang: str,
    status: int,
    words: str,
) -> None:
    context, page, chat, errors = open_chat(chromium, taverna, size, lang)
    stub.script(
        Reply(status=status, error_message="scripted failure"),
        Reply(tokens=["The ", "ferry ", "leaves ", "at ", "dawn."]),
    )
    page.locator("#chat-input").fill("When does the ferry leave?")
    page.locator("#send").click()

    failure = page.locator("#failure")
    expect(failure).to_be_visible()
    expect(failure).to_contain_text(words)
    expect(failure).to_contain_text("scripted failure")  # the model API's own words too
    # It sits where the reply would have been: after the person's message, last in the list.
    last = page.locator("ol.messages > li.message").last
    expect(last).to_have_id("failure")
    assert page.locator("#toasts .toast.error").count() == 0
    fits_the_screen(page)
    shot(page, f"{size}-{lang}-failed-reply-{status}")
    stored = taverna.api("GET", f"/chats/{chat['id']}").json()
    assert [m["role"] for m in stored["messages"]] == ["assistant", "user"]

    failure.get_by_role("button", name=RETRY[lang], exact=True).click()
    expect(page.locator("ol.messages > li.message").last).to_contain_text(
        "The ferry leaves at dawn."
    )
    expect(failure).to_have_count(0)
    shot(page, f"{size}-{lang}-failed-reply-retried")
    stored = taverna.api("GET", f"/chats/{chat['id']}").json()
    assert [m["role"] for m in stored["messages"]] == ["assistant", "user", "assistant"]
    assert stored["messages"][-1]["content"] == "The ferry leaves at dawn."
    assert errors == []
    context.close()


def test_a_regenerate_that_fails_retries_as_a_regenerate(
    chromium,  # type: ignore[no-untyped-def]
    taverna: TavernaServer,
    stub: StubServer,
) -> None:
    context, page, chat, errors = open_chat(chromium, taverna, "desktop", "en")
    stub.script(Reply(tokens=["First."]))
    page.locator("#chat-input").fill("Hello?")
    page.locator("#send").click()
    expect(page.locator("ol.messages > li.message").last).to_contain_text("First.")
    expect(page.locator("#send")).to_be_enabled()
    stub.script(Reply(stream_error="the model fell over"), Reply(tokens=["Second."]))
    page.locator("ol.messages > li.message").last.get_by_role("button", name="Regenerate").click()
    failure = page.locator("#failure")
    expect(failure).to_contain_text("the model fell over")
    failure.get_by_role("button", name="Retry", exact=True).click()
    expect(page.locator("ol.messages > li.message").last).to_contain_text("Second.")
    stored = taverna.api("GET", f"/chats/{chat['id']}").json()
    assert [m["role"] for m in stored["messages"]] == ["assistant", "user", "assistant"]
    assert stored["messages"][-1]["content"] == "Second."
    assert errors == []
    context.close()


@pytest.mark.parametrize(("size", "lang"), [("desktop", "en"), ("phone", "zh-CN")])
def test_with_no_connection_the_chat_asks_for_one_and_then_answers(
    chromium,  # type: ignore[no-untyped-def]
    bare: TavernaServer,
    stub: StubServer,
    size: str,
    lang: str,
) -> None:
    context, page, _chat, errors = open_chat(chromium, bare, size, lang)
    form = page.locator("#first-connection-form")
    expect(form).to_be_visible()
    # Sending before connecting leads to the form; the text stays in the box.
    page.locator("#chat-input").fill("Hello?")
    page.locator("#send").click()
    expect(form.locator("select").first).to_be_focused()
    assert page.locator("#chat-input").input_value() == "Hello?"
    fits_the_screen(page)
    shot(page, f"{size}-{lang}-first-connection")
    form.locator("select").first.select_option("openai")
    form.locator("input[type=url]").fill(stub.base_url("openai"))
    form.locator("input[type=password]").fill("sk-test")
    form.locator("input:not([type=url]):not([type=password])").first.fill("stub-model")
    form.locator("button[type=submit]").click()
    expect(page.locator("#first-connection")).to_be_hidden()
    connections = bare.api("GET", "/connections").json()
    assert [(c["name"], c["model"], c["default"]) for c in connections] == [
        ("stub-model", "stub-model", True)
    ]

    stub.script(Reply(tokens=["Welcome ", "aboard."]))
    page.locator("#chat-input").fill("Is anyone there?")
    page.locator("#send").click()
    expect(page.locator("ol.messages > li.message").last).to_contain_text("Welcome aboard.")
    shot(page, f"{size}-{lang}-first-connection-answered")
    assert errors == []
    context.close()


@pytest.mark.parametrize(
    ("size", "lang", "words"),
    [
        ("desktop", "en", "could not be reached"),
        ("phone", "zh-CN", "无法连接到模型 API"),
    ],
)
def test_a_model_server_that_is_not_running_is_said_so(
    chromium,  # type: ignore[no-untyped-def]
    bare: TavernaServer,
    stub: StubServer,
    size: str,
    lang: str,
    words: str,
) -> None:
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    bare.api(
        "POST",
        "/connections",
        json={
            "name": "gone",
            "api": "openai",
            "url": f"http://127.0.0.1:{port}/v1",
            "model": "m",
            "key": None,
            "default": True,
        },
    )
    context, page, chat, errors = open_chat(chromium, bare, size, lang)
    page.locator("#chat-input").fill("Anyone?")
    page.locator("#send").click()
    failure = page.locator("#failure")
    expect(failure).to_contain_text(words)
    fits_the_screen(page)
    shot(page, f"{size}-{lang}-failed-reply-refused")
    # Point the connection at a running model server: Retry answers.
    bare.api("DELETE", "/connections/gone")
    connect_served(bare, stub)
    stub.script(Reply(tokens=["Here."]))
    failure.get_by_role("button", name=RETRY[lang], exact=True).click()
    expect(page.locator("ol.messages > li.message").last).to_contain_text("Here.")
    stored = bare.api("GET", f"/chats/{chat['id']}").json()
    assert [m["role"] for m in stored["messages"]] == ["assistant", "user", "assistant"]
    assert errors == []
    context.close()
