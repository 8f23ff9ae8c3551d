"""Recall by meaning in the page: the prompt inspector's ledger lists the recalled messages
with their scores, and the prompt holds the recalled block."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from taverna.model.chat import ChatState, NodeRole
from taverna.providers.embeddings import LocalEmbedder
from taverna.services.chats.service import ChatService
from taverna.services.house.data import open_data
from taverna.services.memory.recall import EmbeddingBacklog
from tests.browser.conftest import shot
from tests.stubs.taverna_server import TavernaServer
from tests.support.folders import small_recall

pytestmark = pytest.mark.skipif(
    not LocalEmbedder.available(), reason="the local embedding model is not installed"
)
DESKTOP = {"width": 1280, "height": 900}
DRAGON = "The red dragon burned the mill at Oxbridge and flew north to the mountains."
FILLER = [
    "We walk along the road and talk about the weather for a while.",
    "The weather is mild today, a little cloudy over the hills.",
    "Let us keep walking; the inn is still some miles away.",
    "I count the milestones as we pass them, one by one.",
]


@pytest.fixture(scope="module")
def recalling(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TavernaServer, str]]:
    data = tmp_path_factory.mktemp("recall") / "data"
    folder = open_data(data)
    store = folder.store
    try:
        small_recall(store)
        chats = ChatService(store)
        chat = chats.create_chat("Long road", greetings=["Hello."], base_state=ChatState()).chat
        chat = chats.append(chat.id, NodeRole.USER, DRAGON, revision=chat.revision).chat
        for i in range(40):
            role = NodeRole.USER if i % 2 == 0 else NodeRole.ASSISTANT
            chat = chats.append(chat.id, role, FILLER[i % 4], revision=chat.revision).chat
        question = "Where did that dragon go after it burned the mill?"
        chat = chats.append(chat.id, NodeRole.USER, question, revision=chat.revision).chat
        embedder = LocalEmbedder()
        EmbeddingBacklog(store, lambda: embedder).drain()
        chat_id = chat.id
    finally:
        store.close()
    server = TavernaServer(data).start()
    # The prompt is built for a Chat Completion API (a new data folder's default may be the
    # local model, a Text Completion one); nothing is sent to it.
    server.api(
        "POST",
        "/connections",
        json={"name": "chat", "api": "openai", "model": "gpt-4o-mini", "default": True},
    )
    try:
        yield server, chat_id
    finally:
        server.stop()


def test_the_inspector_shows_recalled_messages_with_scores(  # type: ignore[no-untyped-def]
    chromium, recalling: tuple[TavernaServer, str]
) -> None:
    server, chat_id = recalling
    preview = server.api("GET", f"/chats/{chat_id}/prompt").json()
    recalled = [i for i in preview["prompt"]["ledger"]["items"] if i["kind"] == "recalled_message"]
    assert recalled and all(i["reason"].startswith("score ") for i in recalled)

    context = chromium.new_context(viewport=DESKTOP)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server.url + f"/#/chat/{chat_id}")
    page.locator("ol.messages").wait_for()
    page.get_by_role("button", name="Prompt inspector").click()
    page.locator("#inspector .pm").first.wait_for()
    assert "Past events:" in page.locator("#inspector .inspector-body").inner_text()
    assert "dragon burned the mill" in page.locator("#inspector .inspector-body").inner_text()
    page.locator("#inspector [data-tab=ledger]").click()
    rows = page.locator("#inspector table.ledger tbody tr[data-kind=recalled_message]")
    rows.first.wait_for()
    assert rows.count() == len(recalled)
    assert "score 0." in rows.first.inner_text()
    # the part column names the kind in words, never by its code
    part = rows.first.locator("td").first.inner_text()
    assert part == "recalled message" and "recalled_message" not in rows.first.inner_text()
    rows.first.scroll_into_view_if_needed()
    shot(page, "desktop-inspector-recall")
    assert not errors
    context.close()
