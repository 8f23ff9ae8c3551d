"""A group member's reply with nothing left once cleaned (empty, or only another
member's line) is not stored: the page says the model returned nothing, and Retry
answers."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.stubs.model_server import Reply, StubServer
from tests.stubs.taverna_server import TavernaServer
from tests.support.browser import new_page


def test_an_empty_group_reply_is_told_and_retried(
    chromium,  # type: ignore[no-untyped-def]
    taverna: TavernaServer,
    stub: StubServer,
) -> None:
    ids = [
        taverna.api("POST", "/characters", json={"name": name, "first_mes": "Hi."}).json()["id"]
        for name in ("Quill", "Rook")
    ]
    group = taverna.api(
        "POST",
        "/groups",
        json={"name": "Empty", "character_ids": ids},
    ).json()
    changes = {"activation_strategy": "list", "muted": ["Rook"], "revision": group["revision"]}
    taverna.api("PATCH", f"/groups/{group['id']}", json=changes)
    chat = taverna.api("POST", f"/groups/{group['id']}/chats", json={}).json()
    context, page, errors = new_page(chromium, {"width": 1280, "height": 800}, "en")
    page.goto(f"{taverna.url}/#/chat/{chat['id']}")
    page.locator("ol.messages .message").first.wait_for()
    stub.script(Reply(tokens=["Rook: I answer for Quill."]), Reply(tokens=["Quill is here."]))
    page.locator("#chat-input").fill("Anyone there?")
    page.locator("#send").click()

    failure = page.locator("#failure")
    expect(failure).to_be_visible()
    expect(failure).to_contain_text("The model returned nothing")
    stored = taverna.api("GET", f"/chats/{chat['id']}").json()["messages"]
    assert [m["role"] for m in stored][-1] == "user"
    failure.locator("#retry").click()
    expect(page.locator("ol.messages > li.message").last).to_contain_text("Quill is here.")
    assert errors == []
    context.close()
