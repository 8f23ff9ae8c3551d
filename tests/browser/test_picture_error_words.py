"""A file that is not a picture, attached in the chat, is refused in words a person can use:
the file's name and why, never the process's internals (Pillow's "<_io.BytesIO object at
0x7f...>"), not even in the folded original words."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.support.browser import new_page

pytestmark = pytest.mark.browser


@pytest.mark.parametrize(
    ("size", "lang", "viewport"),
    [
        ("desktop", "en", {"width": 1280, "height": 800}),
        ("phone", "zh-CN", {"width": 375, "height": 812}),
    ],
)
def test_a_file_that_is_no_picture_is_refused_without_python_internals(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, size, lang, viewport
) -> None:
    card = taverna.api(
        "POST", "/characters", json={"name": f"Iris {size}", "first_mes": "Show me."}
    ).json()
    chat = taverna.api("POST", "/chats", json={"character_id": card["id"]}).json()
    context, page, _ = new_page(chromium, viewport, lang)
    page.goto(f"{taverna.url}/#/chat/{chat['id']}")
    expect(page.locator("ol.messages > li.message")).to_have_count(1)
    with page.expect_file_chooser() as chooser:
        page.locator("#attach-picture").click()
    chooser.value.set_files(
        files=[
            {
                "name": "notes.png",
                "mimeType": "image/png",
                "buffer": b"these are notes, not a picture",
            }
        ]
    )
    toast = page.locator(".toast.error").first
    expect(toast).to_be_visible()
    words = toast.evaluate("(el) => el.textContent")
    assert "BytesIO" not in words and "0x" not in words and "_io" not in words, words
    shot(page, f"{size}-{lang}-picture-not-a-picture")
    context.close()
