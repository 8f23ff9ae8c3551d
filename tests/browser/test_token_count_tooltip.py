"""The token counter's tooltip names the tokenizer as a person may read it: the bundled
model's own vocabulary by its file's name, never where the file sits on the server.
English on a desktop, Chinese on a phone."""

from __future__ import annotations

import pytest

from taverna.services.connections import local_models
from tests.browser.conftest import TavernaServer, shot
from tests.support.browser import SIZES, catalog, new_page

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not local_models.available(), reason="the `local` extra is not installed"),
]


@pytest.mark.parametrize(("size", "lang"), [("desktop", "en"), ("phone", "zh-CN")])
def test_the_tooltip_shows_no_server_path(  # type: ignore[no-untyped-def]
    chromium, fresh: TavernaServer, size: str, lang: str
) -> None:
    sample = next(c for c in fresh.api("GET", "/characters").json() if c["name"] == "Ione Calder")
    chat = fresh.api("POST", "/chats", json={"character_id": sample["id"]}).json()
    words = catalog(lang)
    context, page, errors = new_page(chromium, SIZES[size], lang)
    try:
        page.goto(f"{fresh.url}/#/chat/{chat['id']}")
        page.fill("#chat-input", "Where does the ferry go?")
        count = page.locator("#token-count")
        # the model's own vocabulary is read by its process, started with the first count
        page.wait_for_function(
            "() => (document.getElementById('token-count')?.title || '').includes('.gguf')",
            timeout=300_000,
        )
        title = count.get_attribute("title") or ""
        assert "/" not in title and "\\" not in title, title
        name = title.split(".gguf")[0].split()[-1] + ".gguf"
        assert title == words["chat.tokenizer"].replace("{name}", name), title
        assert name.startswith("SmolLM2")
        shot(page, f"{size}-{lang}-token-count-tooltip")
        assert errors == []
    finally:
        context.close()
