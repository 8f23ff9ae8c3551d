"""Message search in a real browser: across chats from the chats page and in one chat from
its header, each hit opened (on another branch too) and shown, on a desktop and a phone,
in English and Chinese."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from taverna.model.chat import CharacterRef, NodeRole
from taverna.services.chats.service import ChatService
from taverna.store.sql import open_store
from tests.browser.conftest import TavernaServer, shot
from tests.support.served import serving

pytestmark = pytest.mark.browser

LENGTH = 160  # messages on the active path: more than a window, so a hit must be paged to
FORK = 12  # the reply whose other candidate holds the text searched for


def build(data: Path) -> tuple[str, str, str]:
    """A long chat whose reply #12 has another candidate (another branch) that mentions the
    lighthouse; a line about a lantern deep on the active path; a second chat."""
    store = open_store(data)
    try:
        chats = ChatService(store)
        out = chats.create_chat(
            "海边的旅程",
            characters=(CharacterRef("Mira", None),),
            greetings=["Welcome aboard."],
            greeting_speaker="Mira",
        )
        chat_id, hidden_id, lantern_id = out.chat.id, "", ""
        for i in range(1, LENGTH):
            role = NodeRole.USER if i % 2 else NodeRole.ASSISTANT
            text = f"Line {i} of the voyage."
            if i == 30:
                text = "She lit the brass lantern at the bow."
            out = chats.append(
                chat_id, role, text, revision=out.chat.revision, speaker="" if i % 2 else "Mira"
            )
            if i == FORK:
                hidden_id = out.node.id
                # The other candidate: appended after, as a swipe of this reply...
                alt = chats.swipe(
                    chat_id, out.node.id, "那座灯塔很高，照亮了海面。", revision=out.chat.revision
                )
                # ...then the path goes back to the first, so the lighthouse is off the path.
                out = chats.select_candidate(chat_id, hidden_id, revision=alt.chat.revision)
                hidden_id = alt.node.id
            if i == 30:
                lantern_id = out.node.id
        chats.create_chat("Elsewhere", greetings=["No lighthouses here, only a 灯 and a 塔."])
    finally:
        store.close()
    return chat_id, hidden_id, lantern_id


@pytest.fixture(scope="module")
def searchable(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[TavernaServer, str, str, str]]:
    data = tmp_path_factory.mktemp("search") / "data"
    chat_id, hidden_id, lantern_id = build(data)
    with serving(data) as server:
        yield server, chat_id, hidden_id, lantern_id


def test_search_across_chats_opens_a_message_on_another_branch(chromium, searchable) -> None:  # type: ignore[no-untyped-def]
    server, chat_id, hidden_id, _ = searchable
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{server.url}/#/chats")
    page.fill("#message-search", "灯塔")
    page.press("#message-search", "Enter")
    hit = page.locator(f".search-hit[data-node='{hidden_id}']")
    expect(hit).to_be_visible()
    expect(hit.locator("mark")).to_have_text("灯塔")
    expect(hit).to_contain_text("海边的旅程")
    expect(hit.locator(".badge")).to_have_text("other branch")
    # The other chat has 灯 and 塔 apart: not a match.
    expect(page.locator(".search-hit")).to_have_count(1)
    shot(page, "search-across-chats")
    hit.locator("button").click()
    found = f"li.message[data-id='{hidden_id}']"
    expect(page.locator(found)).to_contain_text("那座灯塔很高")
    page.wait_for_function(
        """(sel) => { const el = document.querySelector(sel); if (!el) return false;
           const r = el.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; }""",
        arg=found,
    )
    assert "found" in (page.locator(found).get_attribute("class") or "")
    shot(page, "search-opened-other-branch")
    # The chat's path now goes through it, as the server says too.
    [again] = server.api("GET", f"/chats/{chat_id}/search", params={"q": "灯塔"}).json()
    assert again["on_path"] is True
    assert errors == []
    page.close()


def test_search_in_a_chat_on_a_phone_in_chinese(chromium, searchable) -> None:  # type: ignore[no-untyped-def]
    server, chat_id, _, lantern_id = searchable
    phone = chromium.new_page(viewport={"width": 375, "height": 812}, has_touch=True)
    phone.add_init_script("localStorage.setItem('taverna.lang', 'zh-CN')")
    errors: list[str] = []
    phone.on("pageerror", lambda e: errors.append(str(e)))
    phone.goto(f"{server.url}/#/chat/{chat_id}")
    expect(phone.locator("ol.messages > li.message").last).to_be_visible()
    assert phone.evaluate("() => document.documentElement.scrollWidth") <= 375
    phone.locator("#open-search").click()
    expect(phone.locator("#chat-search")).to_have_attribute("aria-label", "在此聊天中搜索")
    phone.fill("#chat-search-input", "LANTERN")
    phone.press("#chat-search-input", "Enter")
    hit = phone.locator(f".search-hit[data-node='{lantern_id}']")
    expect(hit.locator("mark")).to_have_text("lantern")
    box = hit.bounding_box()
    assert box is not None and box["width"] <= 375 and box["height"] >= 44
    shot(phone, "search-in-chat-phone-zh")
    hit.locator("button").click()
    expect(phone.locator("#chat-search")).to_have_count(0)
    found = f"li.message[data-id='{lantern_id}']"
    expect(phone.locator(found)).to_contain_text("brass lantern")
    phone.wait_for_function(
        """(sel) => { const el = document.querySelector(sel); if (!el) return false;
           const r = el.getBoundingClientRect(); return r.top < innerHeight && r.bottom > 0; }""",
        arg=found,
    )
    shot(phone, "search-in-chat-phone-opened")
    # Nothing found says so, in Chinese.
    phone.locator("#open-search").click()
    phone.fill("#chat-search-input", "zebra")
    phone.press("#chat-search-input", "Enter")
    expect(phone.locator("#search-empty")).to_have_text("没有找到消息。")
    assert errors == []
    phone.close()
