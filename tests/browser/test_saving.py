"""A reply that finished while the server's disk was full is shown as being saved ("Saving…",
with its text) and becomes a message of the chat by itself once there is room, in both
languages (a small tmpfs as the data folder; skipped where one cannot be mounted)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import shot
from tests.faults.stores import fill, small_volume, wal_emptied
from tests.stubs.model_server import Reply, StubServer
from tests.stubs.taverna_server import TavernaServer
from tests.support.browser import new_page
from tests.support.served import connect_served, serving

SAVING = {"en": "Saving…", "zh-CN": "正在保存…"}


@pytest.fixture(scope="module")
def volume() -> Iterator[Path]:
    with small_volume(64) as found:
        yield found


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, volume: Path, stub: StubServer
) -> Iterator[TavernaServer]:
    log = tmp_path_factory.mktemp("saving") / "serve.log"
    with serving(volume / "data", log, env={"TAVERNA_DATABASE_URL": ""}) as server:
        connect_served(server, stub)
        yield server


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_a_reply_kept_through_a_full_disk_shows_saving_then_lands(
    chromium,  # type: ignore[no-untyped-def]
    served: TavernaServer,
    volume: Path,
    stub: StubServer,
    lang: str,
) -> None:
    character = served.api("GET", "/characters").json()[0]
    chat = served.api("POST", "/chats", json={"character_id": character["id"]}).json()
    context, page, errors = new_page(chromium, {"width": 1280, "height": 800}, lang)
    page.goto(f"{served.url}/#/chat/{chat['id']}")
    page.locator("ol.messages .message").first.wait_for()
    tokens = ["The ", "tide ", "is ", "out ", "today."]
    stub.script(Reply(tokens=tokens, hold_after=len(tokens) - 1))
    page.locator("#chat-input").fill("Is the tide in?")
    page.locator("#send").click()
    expect(page.locator("#streaming")).to_contain_text("The tide is out")
    wal_emptied(served.data)
    filler = fill(volume)
    try:
        stub.release()
        saving = page.locator(".drafts .draft.saving")
        expect(saving).to_be_visible()
        expect(saving).to_contain_text(SAVING[lang])
        expect(saving).to_contain_text("The tide is out today.")
        shot(page, f"desktop-{lang}-reply-saving")
    finally:
        with contextlib.suppress(FileNotFoundError):
            filler.unlink()
    # room again: the reply is moved into the chat and the page shows it as a message
    expect(page.locator(".drafts .draft.saving")).to_have_count(0, timeout=30_000)
    last = page.locator("ol.messages > li.message").last
    expect(last).to_contain_text("The tide is out today.")
    assert errors == []
    context.close()
