"""A 20,000-message chat is crossed at once: Home and End, the rail's "to the first / last
message" buttons and a drag of its thumb reach message #0, the last message and the middle,
on a desktop in English and on a phone in Chinese (how long each takes: bench/chat_jump.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.support.browser import SIZES, catalog, new_page
from tests.support.long_chat import COUNT, IN_SIGHT, build_long_chat, drag_rail, time_jumps
from tests.support.served import serving

pytestmark = pytest.mark.browser

ELEMENTS = "() => document.getElementsByTagName('*').length"


@pytest.fixture(scope="module")
def long_chat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TavernaServer, str]]:
    data = tmp_path_factory.mktemp("jumps") / "data"
    chat_id, _ = build_long_chat(data)
    # A data folder of 20,000 messages starts slower on a busy machine.
    with serving(data, start_timeout=180) as server:
        yield server, chat_id


@pytest.mark.parametrize(("size", "lang"), [("desktop", "en"), ("phone", "zh-CN")])
def test_home_end_and_the_rail_cross_a_long_chat(  # type: ignore[no-untyped-def]
    chromium, long_chat: tuple[TavernaServer, str], size: str, lang: str
) -> None:
    server, chat_id = long_chat
    words = catalog(lang)
    context, page, errors = new_page(chromium, SIZES[size], lang)
    page.goto(f"{server.url}/#/chat/{chat_id}")
    messages = page.locator("ol.messages > li.message")
    expect(messages.last.locator(".index")).to_have_text(f"#{COUNT - 1}")
    rail = page.locator(".chat-rail")
    expect(rail).to_be_visible()
    expect(page.locator("#to-first")).to_have_attribute("aria-label", words["chat.to_first"])
    expect(page.locator("#to-last")).to_have_attribute("aria-label", words["chat.to_last"])
    # The thumb stands at the end of the whole chat, not of the 50 messages held.
    thumb = page.locator(".rail-thumb").bounding_box()
    track = page.locator(".rail-track").bounding_box()
    assert thumb and track
    assert thumb["y"] + thumb["height"] >= track["y"] + track["height"] - 2
    assert thumb["height"] < track["height"] / 4

    took = time_jumps(page)
    assert set(took) >= {"home_s", "end_s", "drag_top_s", "drag_bottom_s", "drag_middle_s"}
    shot(page, f"{size}-{lang}-long-chat-middle")
    # The middle's neighbours are read by cursor as usual: the list climbs from there.
    shown = [int(n) for n in messages.evaluate_all("(els) => els.map((el) => el.dataset.index)")]
    assert shown == list(range(shown[0], shown[0] + len(shown)))
    assert 9_000 < shown[0] < 10_000 < shown[-1] < 11_000

    # Home from the middle, with the thumb at the top of the track.
    page.keyboard.press("Home")
    page.wait_for_function(IN_SIGHT, arg=0)
    expect(messages.first).to_contain_text("Message 0:")
    thumb = page.locator(".rail-thumb").bounding_box()
    assert thumb and abs(thumb["y"] - track["y"]) <= 2
    shot(page, f"{size}-{lang}-long-chat-home")
    # Home in the input moves the caret, not the chat.
    page.locator("#chat-input").fill("a line")
    page.locator("#chat-input").press("End")
    page.wait_for_timeout(300)
    assert page.evaluate(IN_SIGHT, 0)
    drag_rail(page, 1.0)
    page.wait_for_function(IN_SIGHT, arg=COUNT - 1)
    assert page.evaluate(ELEMENTS) <= 5_000
    shot(page, f"{size}-{lang}-long-chat-end")
    assert errors == []
    context.close()


def test_a_short_chat_has_no_rail(chromium, taverna: TavernaServer) -> None:  # type: ignore[no-untyped-def]
    card = taverna.api("POST", "/characters", json={"name": "Brief", "first_mes": "Hi."}).json()
    chat = taverna.api("POST", "/chats", json={"character_id": card["id"]}).json()
    context, page, _ = new_page(chromium, SIZES["desktop"], "en")
    page.goto(f"{taverna.url}/#/chat/{chat['id']}")
    expect(page.locator("ol.messages > li.message")).to_have_count(1)
    expect(page.locator(".chat-rail")).to_be_hidden()
    context.close()
