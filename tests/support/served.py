"""A real `taverna serve` for a test, used as a page uses it: one server or several workers
over one data folder, stopped when the block ends; the stub model as the default
connection, a chat started, a message sent, a task's events read."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.stubs.model_server import StubServer
from tests.stubs.taverna_server import TavernaServer
from tests.support.api import stub_connection

Frame = tuple[int, str, dict[str, Any]]
ENDS = ("done", "error", "cancelled")


@contextmanager
def serving(data: Path, log: Path | None = None, **options: Any) -> Iterator[TavernaServer]:
    """`taverna serve` over the data folder `data`, stopped when the block ends."""
    server = TavernaServer(data, log, **options).start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def serving_workers(
    folder: Path,
    *,
    args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    names: Sequence[str] = ("a", "b"),
) -> Iterator[list[TavernaServer]]:
    """Workers over one data folder (`folder/data`), each logging to `folder/NAME.log`,
    started one after the other (the first seeds the library); all stopped at the end."""
    started: list[TavernaServer] = []
    try:
        for name in names:
            server = TavernaServer(folder / "data", folder / f"{name}.log", args=args, env=env)
            started.append(server.start())
        yield started
    finally:
        for server in started:
            server.stop()


def connect_served(server: TavernaServer, stub: StubServer) -> None:
    """Add the stub's OpenAI API to a running server as its default connection "stub"."""
    server.api("POST", "/connections", json=stub_connection(stub, key=None, default=True))


def connect(server: TavernaServer, stub: StubServer) -> str:
    """The stub as the default OpenAI-compatible connection; the id of the first character."""
    connection = stub_connection(stub, api="openai-compatible", default=True)
    server.api("POST", "/connections", json=connection)
    return str(server.api("GET", "/characters").json()[0]["id"])


def new_chat(server: TavernaServer, character: str) -> tuple[str, int]:
    """A new chat with the character: its id and revision."""
    chat = server.api("POST", "/chats", json={"character_id": character}).json()
    return chat["id"], int(chat["revision"])


def harbour_group(server: TavernaServer) -> str:
    """A group "Harbour" of two new characters, Mira and 小雪, who speak in list order: its id."""
    ids = [
        server.api(
            "POST", "/characters", json={"name": name, "first_mes": f"{name} waves."}
        ).json()["id"]
        for name in ("Mira", "小雪")
    ]
    group = server.api(
        "POST",
        "/groups",
        json={"name": "Harbour", "character_ids": ids, "activation_strategy": "list"},
    ).json()
    return str(group["id"])


def chat_revision(server: TavernaServer, chat_id: str) -> int:
    """The chat's revision as a page reads it, to name in a write."""
    return int(server.api("GET", f"/chats/{chat_id}").json()["revision"])


def send(server: TavernaServer, chat_id: str, revision: int, text: str) -> httpx.Response:
    """A person's message sent for a reply (the answer names the generation's task)."""
    return httpx.post(
        f"{server.url}/api/chats/{chat_id}/generate",
        json={"kind": "normal", "text": text, "revision": revision},
        timeout=30,
    )


def task_events(
    server: TavernaServer,
    task: str,
    *,
    client: httpx.Client | None = None,
    since: int | None = None,
    until_deltas: int | None = None,
) -> list[Frame]:
    """The task's SSE frames as (id, event, data), as `client` (or a new connection)
    follows it on `server`, to the end (or `until_deltas` deltas)."""
    found: list[Frame] = []
    headers = {"Last-Event-ID": str(since)} if since is not None else {}
    frame: dict[str, str] = {}
    url = f"{server.url}/api/tasks/{task}/events"
    stream_from = client.stream if client is not None else httpx.stream
    with stream_from("GET", url, headers=headers, timeout=60) as stream:
        assert stream.status_code == 200
        for line in stream.iter_lines():
            if not line:
                if "event" in frame:
                    found.append((int(frame["id"]), frame["event"], json.loads(frame["data"])))
                    if frame["event"] in ENDS:
                        return found
                    deltas = sum(1 for _, name, _ in found if name == "delta")
                    if until_deltas is not None and deltas >= until_deltas:
                        return found
                frame = {}
                continue
            name, _, value = line.partition(": ")
            frame[name] = value
    return found
