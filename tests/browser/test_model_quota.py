"""An account at its hourly quota of model requests, in Chromium: a script's /genraw and a
sent message are refused with the quota's words (the message stays in the box), nothing
more reaches the model, and My account shows the true count."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.test_accounts import PASSWORDS, add_user
from tests.browser.test_accounts_admin import log_in
from tests.stubs.model_server import StubServer, start_stub
from tests.stubs.taverna_server import TavernaServer
from tests.support.api import stub_connection
from tests.support.served import serving

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1280, "height": 800}
USED_UP = "bob has used 1 of 1 model requests this hour"


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with start_stub() as found:
        yield found


@pytest.fixture
def server(tmp_path: Path) -> Iterator[TavernaServer]:
    """A server with accounts; bob may send one request to a model an hour, to the stub on
    127.0.0.1 (which the operator allows)."""
    data = tmp_path / "data"
    add_user(data, "bob", "--empty")
    subprocess.run(
        [
            str(Path(sys.executable).parent / "taverna"),
            *("user", "quota", "bob", "--generations-per-hour", "1", "--data", str(data)),
        ],
        check=True,
        capture_output=True,
    )
    (data / "server.toml").write_text('outbound_allow = ["127.0.0.1"]\n')
    with serving(data, args=("--accounts",)) as started:
        yield started


def _chat_of_bob(server: TavernaServer, stub: StubServer) -> str:
    with httpx.Client(base_url=f"{server.url}/api", timeout=30) as bob:
        me = bob.post("/login", json={"name": "bob", "password": PASSWORDS["bob"]}).json()
        bob.headers["X-CSRF-Token"] = me["csrf"]
        connection = stub_connection(stub, default=True)
        assert bob.post("/connections", json=connection).status_code == 201
        card = bob.post("/characters", json={"name": "Mira", "first_mes": "Mira waves."}).json()
        return str(bob.post("/chats", json={"character_id": card["id"]}).json()["id"])


def test_past_the_quota_the_page_says_so_and_nothing_reaches_the_model(
    chromium: Any, server: TavernaServer, stub: StubServer
) -> None:
    chat_id = _chat_of_bob(server, stub)
    context = chromium.new_context(viewport=DESKTOP)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{server.url}/#/chat/{chat_id}")
    log_in(page, "bob", PASSWORDS["bob"])
    page.goto(f"{server.url}/#/chat/{chat_id}")
    page.locator("ol.messages").wait_for()
    box = page.get_by_label("Message", exact=True)
    send = page.get_by_role("button", name="Send", exact=True)
    toasts = page.locator("#toasts .toast.error")

    box.fill("Hello")
    send.click()
    expect(page.locator("ol.messages")).to_contain_text("Hello, traveller.")
    assert len(stub.requests) == 1

    # the hour's one request is used: a script's /genraw is refused with the quota's words
    box.fill("/genraw say hi")
    send.click()
    expect(toasts.last).to_contain_text(USED_UP)
    # and so is a message, which stays in the box
    box.fill("Are you there?")
    send.click()
    expect(toasts.last).to_contain_text(USED_UP)
    expect(toasts.last).to_contain_text("Your message was kept in the box.")
    assert box.input_value() == "Are you there?"
    assert len(stub.requests) == 1

    page.goto(f"{server.url}/#/account")
    expect(page.locator("#my-generations")).to_contain_text("Model requests this hour:")
    expect(page.locator("#my-generations")).to_contain_text("1 of 1")
    assert errors == []
    context.close()
