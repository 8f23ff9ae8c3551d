"""A reply whose prompt waits behind other chats' builds says "queued" (and how many go
first) where the reply will stream, in the person's language, instead of a silent spinner;
once its turn comes the message shows and the reply streams as usual.

The server runs in this process (uvicorn on 127.0.0.1) so its prompt builds can be held."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from playwright.sync_api import expect

from taverna.server.app import create_app
from taverna.server.context import AppContext, open_context
from taverna.services.turns import Ask
from tests.browser.conftest import shot
from tests.stubs.model_server import Reply, StubServer
from tests.support.browser import catalog, new_page, say


class Held:
    """An in-process server whose prompt builds wait while `gate` is closed."""

    def __init__(self, ctx: AppContext, url: str) -> None:
        self.ctx = ctx
        self.url = url
        self.gate = threading.Event()
        self.gate.set()

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.request(method, f"{self.url}/api{path}", timeout=30, **kwargs)

    def send(self, chat_id: str, text: str) -> dict[str, Any]:
        revision = self.api("GET", f"/chats/{chat_id}").json()["revision"]
        body = {"kind": "normal", "text": text, "revision": revision}
        answer = self.api("POST", f"/chats/{chat_id}/generate", json=body)
        assert answer.status_code == 202, answer.text
        started: dict[str, Any] = answer.json()
        return started


@pytest.fixture
def held(tmp_path: Path, stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[Held]:
    ctx = open_context(tmp_path / "data")
    ctx.connections.add(
        "stub", "openai", url=stub.base_url("openai"), model="stub-model", default=True
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    server = Held(ctx, f"http://127.0.0.1:{sock.getsockname()[1]}")
    plan = ctx.generation.planner.plan_generation

    def waiting(chat_id: str, ask: Ask, run: Any = None) -> Any:
        server.gate.wait(30)
        return plan(chat_id, ask, run)

    monkeypatch.setattr(ctx.generation.planner, "plan_generation", waiting)
    running = uvicorn.Server(uvicorn.Config(create_app(ctx), log_level="error"))
    thread = threading.Thread(target=running.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not running.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert running.started
    try:
        yield server
    finally:
        server.gate.set()
        running.should_exit = True
        thread.join(15)
        ctx.close()


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_a_reply_waiting_its_turn_says_it_is_queued(
    chromium: Any, held: Held, stub: StubServer, lang: str
) -> None:
    words = catalog(lang)
    card = held.api("POST", "/characters", json={"name": "Mira"}).json()
    chats = [
        held.api("POST", "/chats", json={"character_id": card["id"]}).json()["id"] for _ in range(3)
    ]
    stub.script(Reply(tokens=["First."]), Reply(tokens=["Second."]), Reply(tokens=["At last."]))
    context, page, errors = new_page(chromium, {"width": 1280, "height": 800}, lang)
    page.goto(f"{held.url}/#/chat/{chats[2]}")
    page.locator("#chat-input").wait_for()
    # Two other chats' sends come first; the first one's build is held.
    held.gate.clear()
    first = threading.Thread(target=held.send, args=(chats[0], "One"), daemon=True)
    first.start()
    deadline = time.monotonic() + 10
    while held.ctx.generation.build_queue.busy == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    second = held.send(chats[1], "Two")
    assert second["task"]["status"] == "queued" and second["position"] == 1

    page.locator("#chat-input").fill("Is it my turn?")
    page.locator("#send").click()
    note = page.locator("#queued")
    expect(note).to_have_text(say(words, "chat.queued", n=2))
    expect(page.locator("#streaming")).to_be_visible()
    shot(page, f"chat-queued-{lang}")

    held.gate.set()  # the builds go, one after another
    expect(page.locator("ol.messages > li.message", has_text="Is it my turn?")).to_be_visible()
    expect(
        page.locator("ol.messages > li.message:not(.streaming)", has_text="At last.")
    ).to_be_visible()
    expect(note).to_have_count(0)
    first.join(10)
    assert errors == []
    context.close()
