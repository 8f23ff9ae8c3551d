"""Failures the page meets are told in words, with what was kept: a message the server
refuses as too large, and a server that cannot be reached, leave the text in the box."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.stubs.taverna_server import TavernaServer
from tests.support.served import serving

DESKTOP = {"width": 1280, "height": 800}


@pytest.fixture(scope="module")
def small_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TavernaServer]:
    """A server whose config reads request bodies of at most 64 KiB."""
    data = tmp_path_factory.mktemp("errors") / "data"
    data.mkdir()
    (data / "server.toml").write_text("[limits]\nbody_mib = 0.0625\n")
    with serving(data) as server:
        yield server


def test_a_refused_or_lost_message_stays_in_the_box_and_says_why(
    chromium,  # type: ignore[no-untyped-def]
    small_server: TavernaServer,
    tmp_path: Path,
) -> None:
    character = small_server.api("GET", "/characters").json()[0]
    chat = small_server.api("POST", "/chats", json={"character_id": character["id"]}).json()
    context = chromium.new_context(viewport=DESKTOP)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{small_server.url}/#/chat/{chat['id']}")
    page.locator("ol.messages").wait_for()
    box = page.get_by_label("Message", exact=True)
    toasts = page.locator("#toasts .toast.error")

    # Too large for the server (413): said so, with the limit, and the text stays.
    long_text = "The lantern swings. " * 3500  # 70,000 characters
    box.fill(long_text)
    page.get_by_role("button", name="Send", exact=True).click()
    expect(toasts.last).to_contain_text("too large for the server")
    expect(toasts.last).to_contain_text("64 KiB")
    expect(toasts.last).to_contain_text("Your message was kept in the box.")
    assert box.input_value() == long_text

    # The server cannot be reached: said so, and the text stays.
    page.route("**/api/chats/*/generate", lambda route: route.abort())
    box.fill("Where does this road go?")
    page.get_by_role("button", name="Send", exact=True).click()
    expect(toasts.last).to_contain_text("could not be reached")
    expect(toasts.last).to_contain_text("Your message was kept in the box.")
    assert box.input_value() == "Where does this road go?"
    # Nothing was stored by either attempt.
    stored = small_server.api("GET", f"/chats/{chat['id']}").json()
    assert [m["role"] for m in stored["messages"]] == ["assistant"]
    assert errors == []
    context.close()
