"""`taverna chat` with summaries: /summary makes, changes and removes them; /prompt shows
which one went in. `taverna prompt` places a chat file's stored summary."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import taverna.cli.chat  # noqa: F401 - registers the command
from taverna.cli.main import app
from tests.stubs import Reply, StubServer

pytestmark = pytest.mark.stub_model(key="sk-terminal-chat-key-77778888")


def test_a_terminal_session_makes_shows_changes_and_removes_a_summary(
    data: Path,
    stub: StubServer,
) -> None:
    stub.script(
        Reply(tokens=["Aboard."]), Reply(tokens=["They sailed home."]), Reply(tokens=["Yes."])
    )
    session = "\n".join(
        [
            "Take me home",
            "/summary make",
            "Are we there?",
            "/prompt",
            "/summary set They sailed home at dusk.",
            "/summary remove",
            "/summary",
            "/quit",
            "",
        ]
    )
    result = CliRunner().invoke(app, ["chat", "Ione Calder", "--data", str(data)], input=session)
    assert result.exit_code == 0, result.output
    assert "summary #1 (message #2): They sailed home." in result.output
    # the summary request: the chat's prompt, the summary prompt last
    summary_request = stub.requests[-2].body["messages"]
    assert summary_request[-1]["content"].startswith("Ignore previous instructions.")
    # the next reply's prompt carried it, and /prompt says so
    assert {"role": "system", "content": "[Summary: They sailed home.]"} in stub.requests[-1].body[
        "messages"
    ]
    assert "summary #1 on message #2, in this prompt: They sailed home." in result.output
    assert "summary #1 (message #2): They sailed home at dusk." in result.output
    assert result.output.count("no summaries on this path") == 2  # after remove, and /summary


def test_an_automatic_summary_is_made_before_a_one_turn_chat_ends(
    data: Path,
    stub: StubServer,
) -> None:
    from dataclasses import replace

    from taverna.model.summary import SummarySettings
    from taverna.services.chats.service import ChatService
    from taverna.services.house.data import open_data
    from taverna.services.memory.summaries import SummaryService
    from taverna.services.turns.summary_generation import save_summary_settings

    with open_data(data) as opened:
        save_summary_settings(opened.store, replace(SummarySettings(), prompt_interval=2))
    stub.script(Reply(tokens=["Aboard."]), Reply(tokens=["Ione took a passenger."]))
    result = CliRunner().invoke(
        app, ["chat", "Ione Calder", "--say", "Take me home", "--data", str(data)]
    )
    assert result.exit_code == 0, result.output
    with open_data(data) as opened:
        [listing] = opened.store.list_chats()
        current = SummaryService(ChatService(opened.store)).current(listing.chat.id)
    assert current is not None and current.text == "Ione took a passenger."
