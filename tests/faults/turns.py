"""What a page does in the fault tests: follow a task's events (in a thread, to keep
following while the test breaks something) and wait for the chat; opening a chat and
sending are in `tests.support.served`."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from tests.stubs.taverna_server import TavernaServer
from tests.support.served import ENDS, Frame

# TAVERNA_FAULT_TRIES=N repeats each fault N times
TRIES = int(os.environ.get("TAVERNA_FAULT_TRIES", "1"))


class Follower:
    """A task's event stream read to its end on a thread, as a page reads it."""

    def __init__(self, server: TavernaServer, task: str, since: int | None = None) -> None:
        self.frames: list[Frame] = []
        self.failure: BaseException | None = None
        self._thread = threading.Thread(target=self._read, args=(server, task, since), daemon=True)
        self._thread.start()

    def _read(self, server: TavernaServer, task: str, since: int | None) -> None:
        headers = {"Last-Event-ID": str(since)} if since is not None else {}
        frame: dict[str, str] = {}
        try:
            with httpx.stream(
                "GET", f"{server.url}/api/tasks/{task}/events", headers=headers, timeout=90
            ) as stream:
                for line in stream.iter_lines():
                    if line:
                        name, _, value = line.partition(": ")
                        frame[name] = value
                        continue
                    if "event" in frame:
                        data = json.loads(frame["data"])
                        self.frames.append((int(frame["id"]), frame["event"], data))
                        if frame["event"] in ENDS:
                            return
                    frame = {}
        except BaseException as exc:
            self.failure = exc

    def deltas(self) -> int:
        return sum(1 for _, name, _ in self.frames if name == "delta")

    def text(self) -> str:
        return "".join(d["text"] for _, name, d in self.frames if name == "delta")

    def wait_for(self, deltas: int, timeout: float = 30) -> None:
        until(lambda: self.deltas() >= deltas or not self._thread.is_alive(), timeout)
        assert self.deltas() >= deltas, (self.frames[-3:], self.failure)

    def end(self, timeout: float = 90) -> Frame:
        self._thread.join(timeout)
        assert self.frames and self.frames[-1][1] in ENDS, (self.frames[-3:], self.failure)
        return self.frames[-1]


def until(check: Callable[[], bool], timeout: float, pause: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(pause)
    return check()


def answer(server: TavernaServer, path: str) -> httpx.Response:
    return httpx.get(f"{server.url}/api{path}", timeout=10)


def messages(server: TavernaServer, chat_id: str) -> list[dict[str, Any]] | None:
    """The chat's messages as the page reads them (None while the server cannot answer)."""
    try:
        found = answer(server, f"/chats/{chat_id}")
    except httpx.HTTPError:
        return None
    if found.status_code != 200:
        return None
    return list(found.json()["messages"])


def settled(server: TavernaServer, chat_id: str, text: str, timeout: float = 30) -> int:
    """Wait until nothing of the chat is being saved and `text` is a message of it; how
    many of its messages say `text` (1: kept once, 0: lost)."""

    def saved() -> bool:
        try:
            drafts = answer(server, f"/chats/{chat_id}/drafts")
        except httpx.HTTPError:
            return False
        if drafts.status_code != 200 or any(d.get("saving") for d in drafts.json()):
            return False
        found = messages(server, chat_id)
        return found is not None and any(m["content"] == text for m in found)

    until(saved, timeout, pause=0.25)
    found = messages(server, chat_id) or []
    return sum(1 for m in found if m["content"] == text)


def json_error(response: httpx.Response) -> dict[str, Any]:
    """The error detail of a JSON error answer (asserting that it is one)."""
    assert response.headers.get("content-type", "").startswith("application/json"), response.text
    detail = response.json()["detail"]
    assert isinstance(detail, dict) and detail.get("code") and detail.get("message"), detail
    return detail
