"""A 20,000-message chat in a real browser: it opens at its end at once, scrolling up pages
back to message #0 with a bounded DOM, a candidate switch redraws only the message and what
follows it, and a write behind the page's back is met with a reload and a toast."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.support.long_chat import COUNT, build_long_chat
from tests.support.served import serving

pytestmark = pytest.mark.browser

DOM_LIMIT = 5_000
ELEMENTS = "() => document.getElementsByTagName('*').length"
FIRST_SHOWN = "() => Number(document.querySelector('ol.messages > li.message')?.dataset.index)"
LAST_SHOWN = (
    "() => Number([...document.querySelectorAll('ol.messages > li.message')].pop()?.dataset.index)"
)


@pytest.fixture(scope="module")
def long_chat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TavernaServer, str]]:
    data = tmp_path_factory.mktemp("long") / "data"
    chat_id, _ = build_long_chat(data)
    # A data folder of 20,000 messages starts slower on a busy machine.
    with serving(data, start_timeout=180) as server:
        yield server, chat_id


def test_a_20000_message_chat(chromium, long_chat: tuple[TavernaServer, str]) -> None:  # type: ignore[no-untyped-def]
    server, chat_id = long_chat
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    messages = page.locator("ol.messages > li.message")

    # Opens showing its last message.
    started = time.perf_counter()
    page.goto(f"{server.url}/#/chat/{chat_id}")
    last = messages.last
    expect(last).to_contain_text(f"Message {COUNT - 1}:")
    opened = time.perf_counter() - started
    expect(last.locator(".index")).to_have_text(f"#{COUNT - 1}")
    expect(last.locator(".swipes .counter")).to_have_text("3/3")
    assert last.is_visible()
    # A message's own markup shows as SillyTavern shows it, through the sanitizer: the bold
    # name is bold, and no tag is left as text.
    expect(last.locator(".content b")).to_have_text("Brasswater")
    assert "<b>" not in last.inner_text()
    assert page.evaluate(ELEMENTS) <= DOM_LIMIT
    shot_path = shot(page, "long-chat-open")
    assert shot_path.exists()

    # A candidate switch on the last reply redraws that message alone: earlier elements stay.
    earlier = messages.nth(messages.count() - 5)
    earlier.evaluate("(el) => { el.keptMark = 'still here'; }")
    last.evaluate("(el) => { el.keptMark = 'old'; }")
    held = messages.count()
    messages.evaluate_all("(els) => els.forEach((el) => { el.tagged = el.dataset.index; })")
    started = time.perf_counter()
    last.get_by_role("button", name="Previous candidate").click()
    expect(messages.last).to_contain_text("Second draft of the end.")
    switched = time.perf_counter() - started
    expect(messages.last.locator(".swipes .counter")).to_have_text("2/3")
    assert earlier.evaluate("(el) => el.isConnected && el.keptMark") == "still here"
    assert messages.last.evaluate("(el) => el.keptMark ?? null") is None
    # Every other message kept its own element, in place.
    survivors = messages.evaluate_all("(els) => els.map((el) => el.tagged ?? null)")
    assert len(survivors) == held
    assert survivors[:-1] == [str(COUNT - held + i) for i in range(held - 1)]
    assert survivors[-1] is None
    messages.last.get_by_role("button", name="Next candidate").click()
    expect(messages.last).to_contain_text(f"Message {COUNT - 1}:")
    assert earlier.evaluate("(el) => el.isConnected && el.keptMark") == "still here"

    # Scrolling up pages back to message #0, the DOM bounded all the way.
    most = 0
    shown = page.evaluate(FIRST_SHOWN)
    started = time.perf_counter()
    while shown > 0:
        page.evaluate("() => { document.querySelector('ol.messages').scrollTop = 0; }")
        page.wait_for_function(f"() => ({FIRST_SHOWN})() < {shown}", timeout=15_000)
        shown = page.evaluate(FIRST_SHOWN)
        most = max(most, page.evaluate(ELEMENTS))
    climbed = time.perf_counter() - started
    expect(messages.first).to_contain_text("Message 0:")
    expect(messages.first.locator(".index")).to_have_text("#0")
    assert most <= DOM_LIMIT, most
    assert page.evaluate(LAST_SHOWN) < COUNT - 1  # the far end was let go
    page.evaluate("() => { document.querySelector('ol.messages').scrollTop = 0; }")
    shot(page, "long-chat-top")

    # Scrolling back down reads the dropped messages again, by cursor.
    below = page.evaluate(LAST_SHOWN)
    for _ in range(3):
        page.evaluate(
            "() => { const l = document.querySelector('ol.messages'); l.scrollTop = l.scrollHeight; }"
        )
        page.wait_for_function(f"() => ({LAST_SHOWN})() > {below}", timeout=15_000)
        below = page.evaluate(LAST_SHOWN)
    assert page.evaluate(ELEMENTS) <= DOM_LIMIT
    indexes = page.evaluate(
        "() => [...document.querySelectorAll('ol.messages > li.message')].map((el) => Number(el.dataset.index))"
    )
    assert indexes == list(range(indexes[0], indexes[0] + len(indexes)))

    # A write behind the page's back: the page's next write is stale, so it reloads and says so.
    target = messages.nth(3)
    elsewhere = server.api("GET", f"/chats/{chat_id}?limit=1").json()["revision"]
    server.api(
        "PATCH", f"/chats/{chat_id}", json={"title": "Renamed elsewhere", "revision": elsewhere}
    )
    target.get_by_role("button", name="Hide", exact=True).click()
    expect(page.locator(".toast", has_text="changed elsewhere")).to_be_visible()
    expect(page.locator(".chat-title")).to_have_text("Renamed elsewhere")
    expect(messages.last).to_contain_text(f"Message {COUNT - 1}:")
    assert page.locator(".message.hidden-msg").count() == 0
    print(
        f"\nopen {opened * 1000:.0f} ms, switch {switched * 1000:.0f} ms, "
        f"climb to #0 {climbed:.1f} s, most DOM elements {most}"
    )
    assert errors == []
    page.close()
