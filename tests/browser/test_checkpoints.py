"""Checkpoints in the page: set one on a message, see it in the tree, go back to it, delete it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.browser.test_pages import seed_chat
from tests.stubs.model_server import StubServer

pytestmark = pytest.mark.browser


def test_checkpoint_set_open_delete(chromium, taverna: TavernaServer, stub: StubServer) -> None:  # type: ignore[no-untyped-def]
    chat_id = seed_chat(taverna, stub)
    before = [m["id"] for m in taverna.api("GET", f"/chats/{chat_id}").json()["messages"]]
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    page.goto(f"{taverna.url}/#/chat/{chat_id}")
    items = page.locator("ol.messages > li.message")
    expect(items).to_have_count(len(before))
    page.once("dialog", lambda d: d.accept("灯塔之前"))
    items.nth(2).get_by_role("button", name="Checkpoint", exact=True).click()
    expect(page.locator(".toast").last).to_contain_text("灯塔之前")
    made = taverna.api("GET", f"/chats/{chat_id}/checkpoints").json()
    assert [(c["name"], c["node_id"]) for c in made] == [("灯塔之前", before[2])]

    page.get_by_role("button", name="Conversation tree").click()
    tree = page.locator("#tree")
    expect(tree.locator(".badge.checkpoint")).to_have_text("⚑ 灯塔之前")
    shot(page, "checkpoints-desktop")
    tree.get_by_role("button", name="Go to checkpoint 灯塔之前").click()
    expect(tree).to_have_count(0)
    expect(items).to_have_count(3)
    assert [m["id"] for m in taverna.api("GET", f"/chats/{chat_id}").json()["messages"]] == (
        before[:3]
    )

    page.set_viewport_size({"width": 375, "height": 812})
    page.get_by_role("button", name="Conversation tree").click()
    expect(tree.get_by_role("button", name="Delete checkpoint 灯塔之前")).to_be_visible()
    shot(page, "checkpoints-phone")
    page.once("dialog", lambda d: d.accept())
    tree.get_by_role("button", name="Delete checkpoint 灯塔之前").click()
    expect(tree.locator(".checkpoint-row")).to_have_count(0)
    expect(tree).to_contain_text("No checkpoints yet")
    assert taverna.api("GET", f"/chats/{chat_id}/checkpoints").json() == []
    page.close()
