"""Small trips of the page, each tried in English on a desktop and in Chinese on a phone:
a search hit on another branch says the chat switched branch, in a toast that stands above
the composer; the phone menu closes after a tap on the page already open; a chat line whose
`mes` is not its selected swipe imports with a warning and both texts as candidates."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from taverna.model.chat import CharacterRef, NodeRole
from taverna.services.chats.service import ChatService
from taverna.store.sql import open_store
from tests.browser.conftest import TavernaServer, shot
from tests.support.browser import SIZES, catalog, new_page, say
from tests.support.served import serving

pytestmark = pytest.mark.browser

CASES = [("desktop", "en"), ("phone", "zh-CN")]


def _branchy_chat(chats: ChatService, title: str) -> tuple[str, str]:
    """A chat whose second reply has another candidate, off the path, about a kite."""
    out = chats.create_chat(
        title,
        characters=(CharacterRef("Mira", None),),
        greetings=["Welcome."],
        greeting_speaker="Mira",
    )
    chat_id = out.chat.id
    out = chats.append(chat_id, NodeRole.USER, "Shall we fly?", revision=out.chat.revision)
    out = chats.append(
        chat_id, NodeRole.ASSISTANT, "Not today.", revision=out.chat.revision, speaker="Mira"
    )
    shown = out.node.id
    alt = chats.swipe(
        chat_id, shown, "The red kite climbs. 风筝飞起来了。", revision=out.chat.revision
    )
    chats.select_candidate(chat_id, shown, revision=alt.chat.revision)
    return chat_id, alt.node.id


@pytest.fixture(scope="module")
def branchy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TavernaServer, dict]]:
    data = tmp_path_factory.mktemp("trips") / "data"
    store = open_store(data)
    try:
        chats = ChatService(store)
        made = {size: _branchy_chat(chats, f"Kites {size}") for size, _ in CASES}
    finally:
        store.close()
    with serving(data) as server:
        yield server, made


def _above_composer(page: Page) -> None:
    """The toasts end above the composer (within moments of a change of the layout):
    nothing of them covers what is typed."""
    page.wait_for_function(
        """() => { const t = document.getElementById('toasts').getBoundingClientRect();
           const c = document.querySelector('.composer');
           return !!c && t.height > 0 && t.bottom <= c.getBoundingClientRect().top + 0.5; }""",
        timeout=5000,
    )


@pytest.mark.parametrize(("size", "lang"), CASES)
def test_a_hit_on_another_branch_says_the_branch_switched_above_the_composer(  # type: ignore[no-untyped-def]
    chromium, branchy, size: str, lang: str
) -> None:
    server, made = branchy
    chat_id, hidden_id = made[size]
    words = catalog(lang)
    context, page, errors = new_page(chromium, SIZES[size], lang)
    try:
        page.goto(f"{server.url}/#/chat/{chat_id}")
        expect(page.locator("ol.messages > li.message").last).to_contain_text("Not today.")
        page.locator("#open-search").click()
        page.fill("#chat-search-input", "kite")
        page.press("#chat-search-input", "Enter")
        hit = page.locator(f".search-hit[data-node='{hidden_id}']")
        expect(hit.locator(".badge")).to_have_text(words["search.other_branch"])
        hit.locator("button").click()
        expect(page.locator(f"li.message[data-id='{hidden_id}']")).to_contain_text("red kite")
        told = page.locator(".toast", has_text=words["search.switched_branch"])
        expect(told).to_be_visible()
        # The toast stands above the composer and its bars, never over what is typed.
        _above_composer(page)
        shot(page, f"{size}-{lang}-search-switched-branch")
        assert server.api("GET", f"/chats/{chat_id}/search", params={"q": "kite"}).json()[0][
            "on_path"
        ]
        assert errors == []
    finally:
        context.close()


@pytest.mark.parametrize(("size", "lang"), CASES)
def test_the_menu_closes_after_a_tap_on_the_page_already_open(  # type: ignore[no-untyped-def]
    chromium, branchy, size: str, lang: str
) -> None:
    server, _ = branchy
    words = catalog(lang)
    context, page, errors = new_page(chromium, SIZES[size], lang)
    try:
        page.goto(f"{server.url}/#/chats")
        nav = page.locator("#nav")
        current = nav.get_by_role("link", name=words["nav.chats"], exact=True)
        toggle = page.locator("#menu-toggle")
        if size == "desktop":
            # No menu to close: the links stay in sight, the page stays.
            expect(toggle).to_be_hidden()
            current.click()
            expect(current).to_be_visible()
            assert page.url.endswith("#/chats")
        else:
            toggle.click()
            expect(toggle).to_have_attribute("aria-expanded", "true")
            expect(current).to_be_visible()
            shot(page, f"{size}-{lang}-menu-open")
            current.click()
            expect(toggle).to_have_attribute("aria-expanded", "false")
            expect(current).to_be_hidden()
            assert "nav-open" not in (page.locator("body").get_attribute("class") or "")
            shot(page, f"{size}-{lang}-menu-closed")
        assert errors == []
    finally:
        context.close()


def _st_chat_differing(character: str) -> bytes:
    lines = [
        {"user_name": "You", "character_name": character, "create_date": "2024-05-01@10h00m00s"},
        {"name": character, "is_user": False, "send_date": "2024-05-01@10h00m01s", "mes": "Hi."},
        {"name": "You", "is_user": True, "send_date": "2024-05-01@10h00m02s", "mes": "Tide?"},
        {
            "name": character,
            "is_user": False,
            "send_date": "2024-05-01@10h00m03s",
            "mes": "High tide at noon (edited).",
            "swipe_id": 1,
            "swipes": ["Low tide now.", "High tide at noon."],
        },
    ]
    return "\n".join(json.dumps(line) for line in lines).encode()


@pytest.mark.parametrize(("size", "lang"), CASES)
def test_a_line_showing_another_text_than_its_swipe_keeps_both_and_says_so(  # type: ignore[no-untyped-def]
    chromium, branchy, size: str, lang: str, tmp_path: Path
) -> None:
    server, _ = branchy
    name = f"Tess {size}"
    server.api("POST", "/characters", json={"name": name, "first_mes": "Hi."})
    words = catalog(lang)
    context, page, errors = new_page(chromium, SIZES[size], lang)
    try:
        page.goto(f"{server.url}/#/import")
        page.locator("#pick-chat-file").wait_for()
        data = _st_chat_differing(name)
        page.locator("#chat-file").set_input_files(
            files=[{"name": f"{name}.jsonl", "mimeType": "application/jsonl", "buffer": data}]
        )
        warning = page.locator(".toast.warning", has_text=f"{name}.jsonl")
        expect(warning).to_be_visible()
        said = say(words, "server.mes_differs_from_swipe")
        expect(warning).to_contain_text(said)
        expect(warning).to_contain_text(say(words, "import.at_line", line=4).strip())
        last = page.locator("ol.messages > li.message").last
        expect(last).to_contain_text("High tide at noon (edited).")
        expect(last.locator(".swipes .counter")).to_have_text("1/2")
        # Told on the import page, the toasts move above the chat's composer once it opens.
        _above_composer(page)
        shot(page, f"{size}-{lang}-import-mes-differs")
        last.locator(".swipe-next").click()
        expect(last.locator(".content")).to_have_text("High tide at noon.")
        expect(last.locator(".swipes .counter")).to_have_text("2/2")
        assert errors == []
    finally:
        context.close()
