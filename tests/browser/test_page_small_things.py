"""What users of other chat apps reach for, in the page: rename a chat from its header,
unsent text kept across a reload, code blocks with their language and a copy button,
connections edited in place and deleted only when confirmed, and a theme choice. Desktop in
English, phone in Chinese."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.browser.test_pages import seed_chat
from tests.stubs.model_server import Reply, StubServer
from tests.support.browser import catalog, say

pytestmark = pytest.mark.browser

CASES = [("desktop", "en", 1280, 800), ("phone", "zh-CN", 375, 812)]


def new_chat(taverna: TavernaServer) -> str:
    characters = taverna.api("GET", "/characters").json()
    chat = taverna.api("POST", "/chats", json={"character_id": characters[0]["id"]}).json()
    return str(chat["id"])


def open_page(chromium, lang: str, width: int, height: int):  # type: ignore[no-untyped-def]
    context = chromium.new_context(viewport={"width": width, "height": height})
    context.add_init_script(f"localStorage.setItem('taverna.lang', '{lang}')")
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    return context, context.new_page()


@pytest.mark.parametrize(("size", "lang", "width", "height"), CASES)
def test_chat_header_input_and_code(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, size: str, lang: str, width: int, height: int
) -> None:
    words = catalog(lang)
    chat_id = new_chat(taverna)
    view = taverna.api("GET", f"/chats/{chat_id}").json()
    greeting = view["messages"][0]
    code = 'Try this:\n\n```python\nprint("<b>hi</b>")\n```\n\nand this:\n\n```\nplain\n```'
    taverna.api(
        "PATCH",
        f"/chats/{chat_id}/messages/{greeting['id']}",
        json={"content": code, "revision": view["revision"]},
    )
    context, page = open_page(chromium, lang, width, height)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{taverna.url}/#/chat/{chat_id}")
    first = page.locator("ol.messages > li.message").first

    # Code blocks: the fence's language (or a plain word), a copy button; no HTML from the text.
    heads = first.locator(".code-head")
    expect(heads).to_have_count(2)
    expect(heads.locator(".code-lang")).to_have_text(["python", words["chat.code"]])
    assert first.locator("pre b").count() == 0
    heads.first.get_by_role("button", name=words["chat.copy_code"]).click()
    expect(page.locator(".toast").last).to_have_text(words["chat.copied"])
    assert page.evaluate("navigator.clipboard.readText()") == 'print("<b>hi</b>")'

    # Rename from the header.
    page.once("dialog", lambda d: d.accept("灯塔之夜"))
    page.locator("#rename-chat").click()
    expect(page.locator(".chat-title")).to_have_text("灯塔之夜")
    assert taverna.api("GET", f"/chats/{chat_id}").json()["title"] == "灯塔之夜"
    expect(page.locator(".toast").last).to_have_text(say(words, "chat.renamed", name="灯塔之夜"))

    # Unsent text survives a reload, per chat; an emptied box stays empty.
    box = page.get_by_label(words["chat.input"], exact=True)
    box.fill("还没发出去的话 and more")
    page.reload()
    expect(box).to_have_value("还没发出去的话 and more")
    other = new_chat(taverna)
    page.goto(f"{taverna.url}/#/chat/{other}")
    expect(page.locator("ol.messages > li.message")).to_have_count(1)
    expect(box).to_have_value("")
    page.goto(f"{taverna.url}/#/chat/{chat_id}")
    expect(box).to_have_value("还没发出去的话 and more")
    shot(page, f"small-things-chat-{size}")
    box.fill("")
    page.reload()
    expect(page.locator("ol.messages > li.message")).to_have_count(1)
    expect(box).to_have_value("")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    assert errors == []
    context.close()


@pytest.mark.parametrize(("size", "lang", "width", "height"), CASES)
def test_connections_edit_and_confirm_and_theme(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, size: str, lang: str, width: int, height: int
) -> None:
    words = catalog(lang)
    name = f"spare-{size}"
    taverna.api(
        "POST",
        "/connections",
        json={
            "name": name,
            "api": "openai-compatible",
            "url": "http://127.0.0.1:9/v1",
            "model": "m1",
        },
    )
    context, page = open_page(chromium, lang, width, height)
    page.goto(f"{taverna.url}/#/connections")
    row = page.locator(f"li.connection[data-name='{name}']")
    row.get_by_role("button", name=words["connections.edit"], exact=True).click()
    editor = row.get_by_role("form", name=say(words, "connections.edit_named", name=name))
    expect(editor).to_be_visible()
    editor.get_by_label(words["connections.model"]).fill("m2")
    shot(page, f"connection-edit-{size}")
    editor.get_by_role("button", name=words["common.save"]).click()
    expect(page.locator(f"li.connection[data-name='{name}']")).to_contain_text("m2")
    saved = next(c for c in taverna.api("GET", "/connections").json() if c["name"] == name)
    assert (saved["model"], saved["url"]) == ("m2", "http://127.0.0.1:9/v1")

    # Delete asks first: dismissed, nothing goes; accepted, it goes.
    row = page.locator(f"li.connection[data-name='{name}']")
    asked: list[str] = []
    page.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))
    row.get_by_role("button", name=words["common.delete"], exact=True).click()
    assert asked == [say(words, "connections.confirm_delete", name=name)]
    assert any(c["name"] == name for c in taverna.api("GET", "/connections").json())
    page.once("dialog", lambda d: d.accept())
    row.get_by_role("button", name=words["common.delete"], exact=True).click()
    expect(page.locator(f"li.connection[data-name='{name}']")).to_have_count(0)
    assert all(c["name"] != name for c in taverna.api("GET", "/connections").json())

    # The theme: dark by choice, kept across a reload, back to the system's.
    if size == "phone":
        page.locator("#menu-toggle").click()
    page.get_by_label(words["nav.theme"]).select_option("dark")
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    background = "() => getComputedStyle(document.body).backgroundColor"
    assert page.evaluate(background) == "rgb(22, 21, 26)"
    page.reload()
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    shot(page, f"theme-dark-{size}")
    if size == "phone":
        page.locator("#menu-toggle").click()
    page.get_by_label(words["nav.theme"]).select_option("light")
    assert page.evaluate(background) == "rgb(246, 245, 248)"
    page.get_by_label(words["nav.theme"]).select_option("system")
    expect(page.locator("html")).not_to_have_attribute("data-theme", "dark")
    context.close()


@pytest.mark.parametrize(("size", "lang", "width", "height"), CASES)
def test_the_same_card_twice_says_so(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, size: str, lang: str, width: int, height: int
) -> None:
    words = catalog(lang)
    sample = Path(__file__).resolve().parents[2] / "taverna" / "data" / "Ione Calder.png"
    before = taverna.api("GET", "/characters").json()
    context, page = open_page(chromium, lang, width, height)
    page.goto(f"{taverna.url}/#/characters")
    expect(page.locator("ul.cards > li")).to_have_count(len(before))
    page.locator("#card-file").set_input_files(str(sample))
    told = say(words, "characters.import_replaced", name="Ione Calder")
    expect(page.locator(".toast", has_text=told)).to_have_count(1)
    expect(
        page.locator(".toast", has_text=say(words, "characters.imported", name="Ione Calder"))
    ).to_have_count(0)
    shot(page, f"card-again-{size}")
    assert len(taverna.api("GET", "/characters").json()) == len(before)
    context.close()


@pytest.mark.parametrize(("size", "lang", "width", "height"), CASES)
def test_a_stale_draft_kept_is_said_to_sit_aside(  # type: ignore[no-untyped-def]
    chromium,
    taverna: TavernaServer,
    stub: StubServer,
    size: str,
    lang: str,
    width: int,
    height: int,
) -> None:
    import httpx

    words = catalog(lang)
    chat_id = seed_chat(taverna, stub)
    view = taverna.api("GET", f"/chats/{chat_id}").json()
    # A reply stopped early leaves a draft after the last message...
    stub.script(Reply(tokens=[f"slow{i} " for i in range(100)], delay=0.1))
    started = taverna.api(
        "POST",
        f"/chats/{chat_id}/generate",
        json={"kind": "normal", "text": "One more thing.", "revision": view["revision"]},
    ).json()
    with httpx.stream(
        "GET", f"{taverna.url}/api/tasks/{started['task']['id']}/events", timeout=30
    ) as response:
        for line in response.iter_lines():
            if "slow2" in line:
                break
    taverna.api("POST", f"/tasks/{started['task']['id']}/stop")
    deadline = 50
    while not taverna.api("GET", f"/chats/{chat_id}/drafts").json() and deadline:
        deadline -= 1
        httpx.get(f"{taverna.url}/api/chats/{chat_id}", timeout=5)
    assert taverna.api("GET", f"/chats/{chat_id}/drafts").json()
    # ...then the person goes back to an earlier checkpoint: the draft is stale.
    view = taverna.api("GET", f"/chats/{chat_id}").json()
    taverna.api(
        "POST",
        f"/chats/{chat_id}/checkpoints",
        json={
            "node_id": view["messages"][2]["id"],
            "name": "earlier",
            "revision": view["revision"],
        },
    )
    [checkpoint] = taverna.api("GET", f"/chats/{chat_id}/checkpoints").json()
    taverna.api(
        "POST",
        f"/chats/{chat_id}/checkpoints/{checkpoint['id']}/open",
        json={"revision": taverna.api("GET", f"/chats/{chat_id}").json()["revision"]},
    )
    total = taverna.api("GET", f"/chats/{chat_id}").json()["window"]["total"]
    context, page = open_page(chromium, lang, width, height)
    page.goto(f"{taverna.url}/#/chat/{chat_id}")
    draft = page.locator(".draft")
    expect(draft).to_have_count(1)
    draft.get_by_role("button", name=words["chat.draft_keep"]).click()
    expect(page.locator(".toast", has_text=words["chat.draft_kept_aside"])).to_have_count(1)
    expect(draft).to_have_count(0)
    shot(page, f"draft-aside-{size}")
    assert taverna.api("GET", f"/chats/{chat_id}").json()["window"]["total"] == total
    context.close()
