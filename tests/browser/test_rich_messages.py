"""Messages show their authors' HTML and CSS, as SillyTavern's message formatting does: a
card's styled greeting is a panel (not a code block with stray backticks), a display-only
regex script turns a status block into a styled panel, and neither reaches the rest of the page."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.support.browser import new_page

pytestmark = pytest.mark.browser

GREETING = """<style>
@import url(https://evil.example/theme.css);
.dossier { border: 3px solid rgb(200, 120, 40); background: rgb(40, 24, 8); padding: 10px; border-radius: 8px; }
.dossier h3 { color: rgb(255, 200, 0); margin: 0 0 6px; }
.dossier .row { display: flex; justify-content: space-between; color: rgb(230, 230, 230); }
body { background: rgb(255, 0, 0) !important; }
.message, nav, #nav { display: none !important; }
.cover { position: fixed; left: 0; bottom: 0; width: 100vw; height: 12px; background: rgb(0, 0, 255); z-index: 9999; }
</style>
<div class="dossier" id="file">
<h3>Dossier: Vel Orrin</h3>
<div class="row"><span>Rank</span><b>Captain</b></div>
<div class="row"><span>Ship</span><i>The Gull</i></div>
<img src="https://evil.example/spy.png" onerror="window.pwned = 1">
<div class="cover"></div>
</div>

*Vel looks up from the map.* "You came."

<status>HP: 10</status>"""

PANEL = {
    "scriptName": "Status panel",
    "findRegex": r"/<status>HP: (\d+)<\/status>/g",
    "replaceString": (
        "<style>.panel { border: 2px solid rgb(0, 128, 0); background: rgb(220, 255, 220);"
        " color: rgb(0, 80, 0); padding: 4px 8px; border-radius: 6px; }</style>"
        '<div class="panel">HP: $1</div>'
    ),
    "placement": [2],
    "disabled": False,
    "markdownOnly": True,
    "promptOnly": False,
}


@pytest.fixture(scope="module")
def vel_chat(taverna: TavernaServer) -> Iterator[str]:
    before = taverna.api("GET", "/regex/global").json()["scripts"]
    taverna.api("PUT", "/regex/global", json={"scripts": [*before, PANEL]})
    vel = taverna.api(
        "POST", "/characters", json={"name": "Vel Orrin", "first_mes": GREETING}
    ).json()
    chat = taverna.api("POST", "/chats", json={"character_id": vel["id"]}).json()
    try:
        yield chat["id"]
    finally:
        taverna.api("PUT", "/regex/global", json={"scripts": before})


def colour(locator: object, prop: str) -> str:
    return locator.evaluate(f"(el) => getComputedStyle(el).{prop}")  # type: ignore[attr-defined,no-any-return]


@pytest.mark.parametrize(
    ("size", "lang", "viewport"),
    [
        ("desktop", "en", {"width": 1280, "height": 800}),
        ("phone", "zh-CN", {"width": 375, "height": 812}),
    ],
)
def test_a_cards_styled_greeting_and_a_display_scripts_panel_show_styled_and_contained(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, vel_chat: str, size: str, lang: str, viewport: dict[str, int]
) -> None:
    context, page, _ = new_page(chromium, viewport, lang)
    outside: list[str] = []
    page.on("request", lambda r: outside.append(r.url) if "evil.example" in r.url else None)
    page.goto(f"{taverna.url}/#/chat/{vel_chat}")
    greeting = page.locator("li.message", has_text="Vel looks up").first
    greeting.wait_for()
    content = greeting.locator(".content")
    dossier = content.locator(".dossier")
    expect(dossier).to_be_visible()
    expect(dossier.locator("h3")).to_have_text("Dossier: Vel Orrin")
    assert colour(dossier, "borderTopColor") == "rgb(200, 120, 40)"
    assert colour(dossier.locator("h3"), "color") == "rgb(255, 200, 0)"
    # No code block, no stray backticks, the tags are not shown as text.
    assert content.locator("pre, code").count() == 0
    assert "`" not in content.inner_text() and "<div" not in content.inner_text()
    expect(content.locator("em")).to_have_text("Vel looks up from the map.")
    # The display-only script's panel, styled by its own <style> block.
    panel = content.locator(".panel")
    expect(panel).to_have_text("HP: 10")
    assert colour(panel, "borderTopColor") == "rgb(0, 128, 0)"
    assert colour(panel, "backgroundColor") == "rgb(220, 255, 220)"
    # The message's rules reach nothing outside it; nothing loads from outside or runs.
    assert colour(page.locator("body"), "backgroundColor") != "rgb(255, 0, 0)"
    expect(greeting).to_be_visible()
    expect(page.locator("#nav")).to_be_attached()
    assert page.locator("#nav").evaluate("(el) => getComputedStyle(el).display") != "none"
    assert (
        content.locator("img").count() == 0 or content.locator("img").get_attribute("src") is None
    )
    # A fixed box over the page stays inside its message: the composer is still on top where it is.
    cover = content.locator(".cover").bounding_box()
    box = content.bounding_box()
    assert cover is not None and box is not None
    assert cover["y"] + cover["height"] <= box["y"] + box["height"] + 1, (cover, box)
    beside = page.evaluate(
        "([x, y]) => document.elementFromPoint(x, y)?.className || ''",
        [box["x"] + box["width"] + 4, cover["y"] + cover["height"] / 2],
    )
    assert "cover" not in beside  # clipped at the message's edge
    send = page.locator("button.primary, button", has_text="Send" if lang == "en" else "发送").last
    hit = send.evaluate(
        "(el) => { const r = el.getBoundingClientRect();"
        " return el.contains(document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2)); }"
    )
    assert hit
    assert page.evaluate("window.pwned") is None
    assert outside == []
    # The store keeps the status block as written: the panel is display only.
    stored = taverna.api("GET", f"/chats/{vel_chat}").json()["messages"][0]["content"]
    assert "<status>HP: 10</status>" in stored
    greeting.scroll_into_view_if_needed()
    shot(page, f"{size}-{lang}-rich-greeting")
    context.close()


def test_a_quick_replys_output_shows_its_html_and_nothing_that_runs(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer
) -> None:
    message = (
        '/sys <div class="qr-panel" style="border: 2px solid rgb(10, 20, 30)">Tide table</div>'
        '<img src=x onerror="window.pwned = 1"><script>window.pwned = 2</script>'
        '<a href="javascript:window.pwned=3">go</a>'
    )
    sets = {"name": "Panels", "active": True, "replies": [{"label": "Tides", "message": message}]}
    taverna.api("PUT", "/quick-replies", json=sets).raise_for_status()
    card = taverna.api(
        "POST", "/characters", json={"name": "Tidewatcher", "first_mes": "Hm."}
    ).json()
    chat = taverna.api("POST", "/chats", json={"character_id": card["id"]}).json()
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    page.goto(f"{taverna.url}/#/chat/{chat['id']}")
    page.locator(".quick-replies").get_by_role("button", name="Tides").click()
    panel = page.locator("li.message .content .qr-panel")
    expect(panel).to_have_text("Tide table")
    assert colour(panel, "borderTopColor") == "rgb(10, 20, 30)"
    content = panel.locator("xpath=..")
    expect(content).to_contain_text("go")
    assert content.locator("script").count() == 0
    assert content.locator("img[onerror]").count() == 0
    assert content.locator("a[href^='javascript']").count() == 0
    page.wait_for_timeout(300)
    assert page.evaluate("window.pwned") is None
    page.close()
