"""A group chat in a real browser against `taverna serve` and a local stub model server:
create a group of three from the page, mute one, a round of two speakers streams in
order (each reply under its speaker's name and picture), switch one reply's candidate,
reload: all there. The same on a phone, in Chinese."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.stubs.model_server import Reply, StubServer

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 375, "height": 812}
MEMBERS = {
    "Wren": "A lamplighter.",
    "Élodie": "A balloon pilot.",
    "小雪": "一位画家。",
}


def messages(page):  # type: ignore[no-untyped-def]
    return page.locator("ol.messages > li.message:not(#streaming)")


def test_group_round_in_the_page(chromium, taverna: TavernaServer, stub: StubServer) -> None:  # type: ignore[no-untyped-def]
    for name, description in MEMBERS.items():
        card = {"name": name, "description": description, "first_mes": ""}
        taverna.api("POST", "/characters", json=card)
    context = chromium.new_context(viewport=DESKTOP)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))

    # Create a group of three from the page: ticked in speaking order, everyone in turn.
    page.goto(taverna.url + "/#/groups")
    page.get_by_role("button", name="New group").click()
    page.locator("#group-name").fill("Lantern Club")
    for name in MEMBERS:
        page.locator(".group-picks label", has_text=name).locator("input").check()
    expect(page.locator(".group-order li")).to_have_text(list(MEMBERS))
    page.locator("#group-strategy").select_option("list")
    shot(page, "desktop-group-new")
    page.locator("#create-group").click()
    page.locator("#group-members").wait_for()
    expect(page.locator("#group-members .member .name")).to_have_text(list(MEMBERS))

    # Mute 小雪: the round is Wren then Élodie.
    page.get_by_label("Mute 小雪").check()
    page.locator(".member.muted", has_text="小雪").wait_for()
    stub.script(
        Reply(tokens=["Wren ", "lights ", "the ", "lamps."], delay=0.25),
        Reply(tokens=["Élodie ", "checks ", "the ", "wind."], delay=0.25),
    )
    page.get_by_label("Message", exact=True).fill("Evening, both of you.")
    page.get_by_role("button", name="Send", exact=True).click()
    streaming = page.locator("#streaming .name")
    expect(streaming).to_have_text("Wren")
    expect(page.locator("#next-speakers")).to_contain_text("Élodie")
    expect(streaming).to_have_text("Élodie", timeout=15000)
    page.locator("ol.messages > li.message:not(.streaming)", has_text="checks the wind.").wait_for()
    page.locator("#streaming").wait_for(state="detached")
    page.locator("#send").wait_for(state="visible")
    names = [messages(page).nth(i).locator(".meta .name").inner_text() for i in range(3)]
    assert names == ["User", "Wren", "Élodie"]
    assert messages(page).nth(1).locator("img.avatar").count() == 1
    shot(page, "desktop-group-round")

    # Switch the last reply's candidate: a new one by the same member, then back.
    stub.script(Reply(tokens=["Élodie ", "smiles."]))
    last = messages(page).last
    last.get_by_role("button", name="Next candidate").click()
    page.locator("ol.messages > li.message:not(.streaming)", has_text="Élodie smiles.").wait_for()
    page.locator("#send").wait_for(state="visible")
    last = messages(page).last
    assert last.locator(".swipes .counter").inner_text() == "2/2"
    assert last.locator(".meta .name").inner_text() == "Élodie"
    last.get_by_role("button", name="Previous candidate").click()
    page.locator(".message", has_text="checks the wind.").wait_for()

    # Make someone speak now: 小雪, though muted.
    stub.script(Reply(tokens=["小雪", "在画", "灯。"]))
    page.get_by_role("button", name="Have 小雪 speak now").click()
    page.locator("ol.messages > li.message:not(.streaming)", has_text="小雪在画灯。").wait_for()
    page.locator("#send").wait_for(state="visible")

    # Write that reply again as another member: a candidate in Wren's name.
    stub.script(Reply(tokens=["Wren ", "paints ", "instead."]))
    page.get_by_role("button", name="Write the last reply again as Wren").click()
    page.locator(
        "ol.messages > li.message:not(.streaming)", has_text="Wren paints instead."
    ).wait_for()
    page.locator("#send").wait_for(state="visible")
    last = messages(page).last
    assert last.locator(".meta .name").inner_text() == "Wren"
    assert last.locator(".swipes .counter").inner_text() == "2/2"
    # The turn order changes from the chat.
    page.locator("#chat-group-strategy").select_option("pooled")
    expect(page.locator("#next-speakers")).to_contain_text("not spoken yet")

    # Élodie gets a connection of her own.
    page.locator(".member-models > summary").click()
    page.get_by_label("Connection of Élodie").select_option("stub")
    expect(page.get_by_label("Connection of Élodie")).to_have_value("stub")

    # Reload: all there.
    page.reload()
    page.locator("#group-members .member").first.wait_for()
    expect(messages(page)).to_have_count(4)
    texts = [messages(page).nth(i).inner_text() for i in range(4)]
    assert "Evening, both of you." in texts[0]
    assert "Wren lights the lamps." in texts[1]
    assert "Élodie checks the wind." in texts[2] and "1/2" in texts[2]
    assert "Wren paints instead." in texts[3] and "2/2" in texts[3]
    names = [messages(page).nth(i).locator(".meta .name").inner_text() for i in range(4)]
    assert names == ["User", "Wren", "Élodie", "Wren"]
    expect(page.locator(".member.muted .name")).to_have_text(["小雪"])
    expect(page.locator("#chat-group-strategy")).to_have_value("pooled")
    page.locator(".member-models > summary").click()
    expect(page.get_by_label("Connection of Élodie")).to_have_value("stub")
    expect(page.get_by_label("Connection of Wren")).to_have_value("")
    # The first candidate is still 小雪's.
    messages(page).last.get_by_role("button", name="Previous candidate").click()
    page.locator(".message", has_text="小雪在画灯。").wait_for()
    assert messages(page).last.locator(".meta .name").inner_text() == "小雪"

    # A phone, in Chinese: the members sit above the messages, the page still works.
    phone = chromium.new_context(viewport=PHONE)
    small = phone.new_page()
    small.add_init_script("localStorage.setItem('taverna.lang', 'zh-CN')")
    small.goto(page.url)
    expect(small.locator("#next-speakers")).to_contain_text("接下来")
    # the members are folded into one line on a phone; a tap unfolds them
    expect(small.locator("#group-members .member").first).to_be_hidden()
    assert small.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    shot(small, "phone-group-chat-zh")
    small.locator(".member-fold > summary").click()
    expect(small.get_by_label("静音 小雪")).to_be_checked()
    assert small.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    shot(small, "phone-group-members-zh")
    phone.close()
    context.close()
    assert errors == []
