"""A turn whose fixed parts alone cannot fit the connection's context is refused before
anything is sent, saying what is too big, by how many tokens, and what to do."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import taverna.cli.chat  # noqa: F401  registers the command
from taverna.cli.main import app
from taverna.model.chat import CharacterRef
from taverna.services.house.workspace import Workspace, open_workspace
from taverna.services.library.editing import create_character
from taverna.services.turns import prompt_fit
from taverna.services.turns.runs import Completed, Ending
from tests.stubs import Reply, StubServer

BIG = "The lighthouse keeper remembers every ship that passed the reef. " * 900


@pytest.fixture
def ws(tmp_path: Path, stub: StubServer) -> Iterator[Workspace]:
    ws = open_workspace(tmp_path / "data", background_backups=False)
    ws.connections.add("small", "llamacpp", url=stub.base_url("llamacpp"), default=True)
    stub.clear()
    stub.requests.clear()
    try:
        yield ws
    finally:
        ws.close()


def _chat(ws: Workspace, description: str) -> str:
    card = {"name": "Mira", "description": description, "first_mes": "Hello."}
    document = create_character(ws.library(), card)
    return ws.chats.create_chat(
        "Mira",
        characters=[CharacterRef("Mira", document)],
        user_name="Alex",
        greetings=["Hello."],
        greeting_speaker="Mira",
    ).chat.id


def _send(ws: Workspace, chat_id: str) -> Completed:
    async def send() -> Completed:
        return await (await ws.generation.send(chat_id, "Hi there.")).wait()

    return asyncio.run(send())


def test_a_card_bigger_than_the_context_is_refused_before_sending(
    ws: Workspace, stub: StubServer
) -> None:
    chat_id = _chat(ws, BIG)
    done = _send(ws, chat_id)
    assert done.outcome is Ending.FAILED and done.cause == prompt_fit.CAUSE
    assert not stub.requests  # no model request
    error = done.error or ""
    assert "cannot fit" in error and "'small'" in error
    assert "Raise the connection's context" in error and "trim the card" in error
    # the numbers: the fixed parts' tokens, the excess, the budget (the context less the reply)
    numbers = [int(n.replace(",", "")) for n in re.findall(r"[\d,]{3,}", error)]
    fixed, excess, budget = numbers[:3]
    assert fixed - budget == excess > 0 and budget > 0
    # the person's message is kept, as for any failed send
    assert ws.chats.active_path(chat_id).nodes[-1].content == "Hi there."


def test_a_card_that_fits_is_sent_and_its_history_shrinks_as_before(
    ws: Workspace, stub: StubServer
) -> None:
    chat_id = _chat(ws, "A friendly lighthouse keeper.")
    stub.script(Reply(tokens=["Welcome."]))
    done = _send(ws, chat_id)
    assert done.outcome is Ending.SAVED, done.error
    assert [r.path for r in stub.requests] == ["/completion"]


def test_the_terminal_chat_says_why_and_sends_nothing(tmp_path: Path, stub: StubServer) -> None:
    data = tmp_path / "data"
    ws = open_workspace(data, background_backups=False)
    ws.connections.add("small", "llamacpp", url=stub.base_url("llamacpp"), default=True)
    create_character(ws.library(), {"name": "Mira", "description": BIG, "first_mes": "Hello."})
    ws.close()
    stub.requests.clear()
    result = CliRunner().invoke(app, ["chat", "Mira", "--say", "Hi", "--data", str(data)])
    assert result.exit_code == 1
    assert "the prompt cannot fit" in result.output and "trim the card" in result.output
    assert not stub.requests


def test_a_chat_completion_card_too_big_is_refused_not_sent_without_it(
    ws: Workspace, stub: StubServer
) -> None:
    ws.connections.add(
        "chat", "openai", url=stub.base_url("openai"), model="stub-model", default=True
    )
    done = _send(ws, _chat(ws, BIG))
    assert done.cause == prompt_fit.CAUSE and "the card's description" in (done.error or "")
    assert not stub.requests


def test_the_advice_follows_the_local_model_s_trained_context() -> None:
    too_big = prompt_fit.Overflow(5_000, 3_746, (("story_string", "", 4_900),))
    below = too_big.message("Local model", (4_096, 8_192))
    assert "5,000 tokens, 1,254 more than the 3,746" in below
    assert "Raise the connection's context (up to the 8,192 tokens the model was trained" in below
    at_most = too_big.message("Local model", (8_192, 8_192))
    assert "Raise" not in at_most and "already runs with all the 8,192 tokens" in at_most
    assert "trim the card" in at_most
