"""Every request of a local connection goes to its model process's own port: a summary,
a script's `/gen` and `/genraw`, and the inspector's request view (a local connection's
`url` is llama.cpp's default, where nothing of ours answers).

The model process is a double here: the stub model server, speaking llama.cpp's
`/completion` protocol on a port of its own, stands where `LocalModels` would start one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from taverna.engine.script import Generation
from taverna.model.chat import CharacterRef, NodeRole
from taverna.services.connections import local_models
from taverna.services.connections.local_models import LocalModels, LocalSpec, _Running
from taverna.services.house.workspace import Workspace, open_workspace
from taverna.services.turns.inspector import inspect_prompt
from taverna.services.turns.quiet import quiet_text
from tests.stubs import Reply, StubServer

SECRET = "local-secret"

pytestmark = [
    pytest.mark.stub_model(key=SECRET),
    pytest.mark.skipif(not local_models.available(), reason="the `local` extra is not installed"),
]


class _Alive:
    """A model process that runs until stopped."""

    def __init__(self) -> None:
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.returncode

    def terminate(self) -> None:
        self.returncode = 0

    def kill(self) -> None:
        self.returncode = -9

    def wait(self, timeout: float | None = None) -> int:
        return self.returncode or 0


@pytest.fixture
def ws(tmp_path: Path, stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    manager = local_models.local_models()
    manager.stop()

    def start(self: LocalModels, spec: LocalSpec) -> _Running:
        return _Running(spec, _Alive(), stub.url, SECRET, 0.0)  # type: ignore[arg-type]

    monkeypatch.setattr(LocalModels, "_start", start)
    ws = open_workspace(tmp_path / "data", background_backups=False)
    ws.connections.add("Local model", "local", default=True, options={"max_tokens": 24})
    assert ws.connections.get("Local model").url != stub.url
    stub.clear()
    stub.requests.clear()
    try:
        yield ws
    finally:
        manager.stop()
        ws.close()


def _chat(ws: Workspace) -> str:
    chat_id = ws.chats.create_chat(
        "Aria",
        characters=[CharacterRef("Aria")],
        user_name="Alex",
        greetings=["Welcome."],
        greeting_speaker="Aria",
    ).chat.id
    rev = ws.chats.get_chat(chat_id).revision
    ws.chats.append(chat_id, NodeRole.USER, "Where is it?", speaker="Alex", revision=rev)
    return chat_id


def test_a_summary_goes_to_the_local_model_process(ws: Workspace, stub: StubServer) -> None:
    chat_id = _chat(ws)
    stub.script(Reply(tokens=["Alex asked the way."]))
    assert ws.summaries is not None
    outcome = asyncio.run(ws.summaries.summarize(chat_id))
    assert outcome.text == "Alex asked the way."
    assert [r.path for r in stub.requests] == ["/completion"]
    assert stub.requests[-1].headers.get("authorization") == f"Bearer {SECRET}"


def test_gen_and_genraw_go_to_the_local_model_process(ws: Workspace, stub: StubServer) -> None:
    chat_id = _chat(ws)
    stub.script(Reply(tokens=["North."]), Reply(tokens=["South."]))
    said = asyncio.run(quiet_text(ws.generation, chat_id, Generation("gen", "Which way?")))
    raw = asyncio.run(quiet_text(ws.generation, chat_id, Generation("genraw", "Which way?")))
    assert (said, raw) == ("North.", "South.")
    assert [r.path for r in stub.requests] == ["/completion", "/completion"]


def test_the_inspector_shows_the_local_model_process_s_url(ws: Workspace, stub: StubServer) -> None:
    view = inspect_prompt(ws.generation, _chat(ws), None)
    assert view.request is not None
    assert view.request["url"] == f"{stub.url}/completion"
    assert not stub.requests  # nothing is sent
