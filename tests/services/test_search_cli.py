"""`taverna chats search` as a person runs it."""

from __future__ import annotations

import json
from pathlib import Path

from taverna.cli.main import app
from taverna.errors import TavernaError
from taverna.model.chat import NodeRole
from taverna.services.house.workspace import open_workspace
from tests.support.cli import run, runner


def test_chats_search_prints_hits_and_marks_other_branches(default_data: Path) -> None:
    folder = open_workspace(default_data, background_backups=False)
    try:
        out = folder.chats.create_chat("海边", greetings=["Hello."], greeting_speaker="Kael")
        first = folder.chats.append(
            out.chat.id, NodeRole.ASSISTANT, "那座灯塔很高。", revision=out.chat.revision
        )
        folder.chats.swipe(
            out.chat.id, first.node.id, "Nothing here.", revision=first.chat.revision
        )
        folder.chats.create_chat("other", greetings=["A lighthouse, 灯塔."])
    finally:
        folder.close()
    text = run("chats", "search", "灯塔", "--chat", out.chat.id[:12])
    assert "[灯塔]" in text and first.node.id + "*" in text and "  other  " not in text
    rows = json.loads(run("chats", "search", "灯塔", "--json"))
    assert len(rows) == 2
    mine = next(row for row in rows if row["chat_id"] == out.chat.id)
    assert mine["on_path"] is False and mine["matches"] == ["灯塔"]
    assert "nothing found" in run("chats", "search", "zebra")
    failed = runner.invoke(app, ["chats", "search", "   "])
    # `main` turns the error into one line and exit code 2 (see test_interchange_cli).
    assert isinstance(failed.exception, TavernaError) and "type a word" in str(failed.exception)
