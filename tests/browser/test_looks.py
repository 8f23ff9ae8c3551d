"""Looks in the page. A background chosen on the Looks page shows behind the chat; custom
CSS applies to the whole page with its outside load taken out and said; a SillyTavern theme
imported there brings its colours; a chat's own CSS goes over the global one. Sprites
uploaded on the Looks page show beside the chat and follow each reply's expression (read
by keywords, English or Chinese); `/expression` sets one; the sprite folds away and stays
folded. In English on a desktop and in Chinese on a phone-sized screen."""

from __future__ import annotations

import io
import json
import re

import pytest
from PIL import Image, ImageDraw
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.stubs.model_server import Reply, StubServer
from tests.support.browser import SIZES, catalog, new_page, say

pytestmark = pytest.mark.browser

# the reply the stub writes, and the expression it reads as (shown with the joy sprite)
REPLIES = {
    "en": ("She laughs and grins, delighted by the joke.", "amusement"),
    "zh-CN": ("她开心地笑了起来，很高兴见到你。", "joy"),
}
TITLE_RED = "rgb(200, 0, 0)"
TITLE_GREEN = "rgb(0, 120, 0)"
HOSTILE_NAME = "<img src=x onerror=window.pwned=1>.jpg"


def sprite(colour: str, mouth: str) -> bytes:
    """A small face of one colour: a smile, a frown or a line."""
    image = Image.new("RGBA", (160, 220), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    draw.ellipse((20, 20, 140, 140), fill=colour, outline="black", width=3)
    draw.ellipse((50, 60, 62, 72), fill="black")
    draw.ellipse((98, 60, 110, 72), fill="black")
    box = (50, 85, 110, 120)
    if mouth == "smile":
        draw.arc(box, 20, 160, fill="black", width=4)
    elif mouth == "frown":
        draw.arc((50, 100, 110, 135), 200, 340, fill="black", width=4)
    else:
        draw.line((55, 110, 105, 110), fill="black", width=4)
    draw.rectangle((45, 140, 115, 215), fill=colour, outline="black", width=3)
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def background() -> bytes:
    image = Image.new("RGB", (640, 400))
    draw = ImageDraw.Draw(image)
    for y in range(400):
        draw.line((0, y, 640, y), fill=(40 + y // 4, 60 + y // 5, 110 + y // 4))
    out = io.BytesIO()
    image.save(out, "JPEG")
    return out.getvalue()


def _character(taverna: TavernaServer, name: str) -> dict:  # type: ignore[type-arg]
    return taverna.api(  # type: ignore[no-any-return]
        "POST", "/characters", json={"name": name, "first_mes": "Welcome, traveller."}
    ).json()


@pytest.mark.parametrize(("size", "lang"), [("desktop", "en"), ("phone", "zh-CN")])
def test_background_theme_and_custom_css(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, tmp_path, size: str, lang: str
) -> None:
    taverna.api("PUT", "/looks", json={"background": None, "custom_css": ""})
    card = _character(taverna, f"Ansel {size}")
    dusk = taverna.api(
        "POST", "/looks/backgrounds", files={"file": (HOSTILE_NAME, background(), "image/jpeg")}
    ).json()
    theme = tmp_path / "Ember.json"
    theme.write_text(
        json.dumps(
            {"name": f"Ember {size}", "main_text_color": "rgb(90, 30, 10)", "custom_css": ""}
        )
    )
    words = catalog(lang)
    context, page, errors = new_page(chromium, SIZES[size], lang)
    try:
        # The Looks page: import a theme and apply it; choose the background; save CSS
        # with an outside load in it, which is taken out and said.
        page.goto(f"{taverna.url}/#/looks")
        page.locator("#theme-file").set_input_files(str(theme))
        expect(page.locator("#theme-list option", has_text=f"Ember {size}")).to_have_count(1)
        page.locator("#theme-list").select_option(f"Ember {size}")
        page.locator("#apply-theme").click()
        expect(page.locator("h1")).to_have_css("color", "rgb(90, 30, 10)")
        tile = page.locator("#backgrounds li", has=page.locator(f"img[src='{dusk['url']}']"))
        tile.get_by_role("button", name=words["looks.use"]).click()
        expect(tile).to_have_class(re.compile(r"\bchosen\b"))
        expect(page.locator("body")).to_have_class(re.compile(r"\bhas-background\b"))
        page.locator("#custom-css-text").fill(
            "@import url(https://evil.example/x.css);\n"
            f".chat-title {{ color: {TITLE_RED}; }}\n"
            "</style><script>window.pwned = 1</script>\n"
        )
        page.locator("#save-css").click()
        expect(page.locator("#css-removed")).to_contain_text("@import")
        expect(page.locator("#custom-css-text")).not_to_contain_text("evil")
        applied = page.locator("style#custom-css").text_content() or ""
        assert ".chat-title" in applied and "evil" not in applied
        expect(tile.locator(".bg-name")).to_have_text(HOSTILE_NAME)
        shot(page, f"looks-page-{size}-{lang}")

        # The chat: the background behind it, the CSS applied; its own CSS goes over.
        chat = taverna.api("POST", "/chats", json={"character_id": card["id"]}).json()
        page.goto(f"{taverna.url}/#/chat/{chat['id']}")
        page.locator("ol.messages > li.message").first.wait_for()
        expect(page.locator(".chat-title")).to_have_css("color", TITLE_RED)
        expect(page.locator("body")).to_have_class(re.compile(r"\bhas-background\b"))
        page.locator("#open-settings").click()
        page.locator("#chat-css").fill(f".chat-title {{ color: {TITLE_GREEN}; }}")
        page.locator("#save-chat-looks").click()
        expect(page.locator(".toast").last).to_contain_text(words["common.saved"])
        page.locator("#close-settings").click()
        expect(page.locator(".chat-title")).to_have_css("color", TITLE_GREEN)
        shot(page, f"looks-chat-css-{size}-{lang}")

        # Kept after a reload; leaving the chat drops its own CSS, not the global one.
        page.reload()
        expect(page.locator(".chat-title")).to_have_css("color", TITLE_GREEN)
        page.goto(f"{taverna.url}/#/characters")
        expect(page.locator("style#chat-custom-css")).to_have_js_property("textContent", "")
        assert TITLE_RED in (page.locator("style#custom-css").text_content() or "")
        # neither the CSS nor the background's name ran anything
        assert page.evaluate("window.pwned") is None
        assert page.locator("script:not([src])").count() == 0
        assert not errors
    finally:
        context.close()
        taverna.api("PUT", "/looks", json={"background": None, "custom_css": ""})
        taverna.api("PUT", "/looks/theme", json={"name": ""})


@pytest.mark.parametrize(("size", "lang"), [("desktop", "en"), ("phone", "zh-CN")])
def test_sprites_follow_each_reply_and_expression(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, stub: StubServer, tmp_path, size: str, lang: str
) -> None:
    card = _character(taverna, f"Mira {size}")
    pictures = []
    for label, colour, mouth in (
        ("joy", "gold", "smile"),
        ("neutral", "lightgrey", "line"),
        ("anger", "tomato", "frown"),
    ):
        path = tmp_path / f"{label}.png"
        path.write_bytes(sprite(colour, mouth))
        pictures.append(str(path))
    words = catalog(lang)
    context, page, errors = new_page(chromium, SIZES[size], lang)
    try:
        # Sprites uploaded on the Looks page, each named by its file.
        page.goto(f"{taverna.url}/#/looks")
        page.locator("#sprite-character").select_option(card["id"])
        page.locator("#sprite-file").set_input_files(pictures)
        expect(page.locator("#sprites li")).to_have_count(3)
        expect(page.locator("#sprites li[data-label='joy']")).to_contain_text(
            words["expression.joy"]
        )
        page.locator("#sprites-section").scroll_into_view_if_needed()
        shot(page, f"looks-sprites-{size}-{lang}")
        sprites = taverna.api("GET", f"/characters/{card['id']}/sprites").json()["sprites"]
        assert sorted(sprites) == ["anger", "joy", "neutral"]

        # The greeting: neutral (a phone starts with the sprite folded).
        chat = taverna.api("POST", "/chats", json={"character_id": card["id"]}).json()
        page.goto(f"{taverna.url}/#/chat/{chat['id']}")
        page.locator("ol.messages > li.message").first.wait_for()
        aside = page.locator("#expression")
        expect(aside).to_have_attribute("data-label", "neutral")
        if size == "phone":
            expect(aside).to_have_class(re.compile(r"\bclosed\b"))
            page.locator("#sprite-toggle").click()
        expect(aside.locator("img.sprite")).to_be_visible()
        expect(aside.locator("img.sprite")).to_have_attribute("src", sprites["neutral"])

        # A reply: the sprite follows its expression (amusement shows the joy sprite).
        reply, label = REPLIES[lang]
        stub.script(Reply(tokens=[reply]))
        page.locator("#chat-input").fill("Tell me a joke.")
        page.locator("#send").click()
        page.locator("ol.messages > li.message:not(.streaming)", has_text=reply).wait_for()
        expect(aside).to_have_attribute("data-label", label)
        expect(aside.locator("img.sprite")).to_have_attribute("src", sprites["joy"])
        expect(aside.locator(".sprite-label")).to_have_text(words[f"expression.{label}"])
        shot(page, f"looks-chat-{size}-{lang}")

        # /expression sets one until the next reply.
        page.locator("#chat-input").fill("/expression anger")
        page.locator("#send").click()
        expect(aside).to_have_attribute("data-label", "anger")
        expect(aside.locator("img.sprite")).to_have_attribute("src", sprites["anger"])
        expect(aside.locator(".sprite-label")).to_have_text(words["expression.anger"])
        shot(page, f"looks-expression-{size}-{lang}")

        # Folded, the sprite stays folded after a reload.
        page.locator("#sprite-toggle").click()
        expect(aside).to_have_class(re.compile(r"\bclosed\b"))
        expect(aside.locator("img.sprite")).to_be_hidden()
        expect(page.locator("#sprite-toggle")).to_have_attribute(
            "aria-label", say(words, "expression.show")
        )
        page.reload()
        expect(page.locator("#expression")).to_have_attribute("data-label", "anger")
        expect(page.locator("#expression")).to_have_class(re.compile(r"\bclosed\b"))
        assert not errors
    finally:
        context.close()
