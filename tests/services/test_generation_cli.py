"""`taverna chat`: one turn with --say, and a scripted terminal session, against a stub model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import taverna.cli.chat  # registers the command
import taverna.cli.connection  # registers the command
from taverna.cli.main import app
from taverna.services.house.data import open_data
from tests.stubs import Reply, StubServer

KEY = "sk-terminal-chat-key-77778888"

pytestmark = pytest.mark.stub_model(key=KEY)


def path_of(data: Path) -> list[tuple[str, str, bool]]:
    with open_data(data) as opened:
        [listing] = opened.store.list_chats()
        nodes = opened.store.active_path(listing.chat.id).nodes
        return [(n.role.value, n.content, n.hidden) for n in nodes]


def test_say_runs_one_turn_prints_the_reply_and_stores_it(data: Path, stub: StubServer) -> None:
    stub.script(Reply(tokens=["*She ", "nods.* ", "Aboard."]))
    result = CliRunner().invoke(
        app, ["chat", "Ione Calder", "--say", "Take me home", "--data", str(data)]
    )
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "*She nods.* Aboard."
    path = path_of(data)
    assert path[-2:] == [
        ("user", "Take me home", False),
        ("assistant", "*She nods.* Aboard.", False),
    ]
    assert path[0][0] == "assistant" and "Heron" in path[0][1]  # the card's greeting
    assert KEY not in result.output


def test_say_with_a_failing_model_exits_nonzero_and_keeps_the_tree(
    data: Path, stub: StubServer
) -> None:
    stub.script(Reply(status=429, error_message="Slow down"))
    result = CliRunner().invoke(app, ["chat", "Ione Calder", "--say", "Hi", "--data", str(data)])
    assert result.exit_code == 1
    assert "rate limited" in result.output and "Slow down" in result.output
    assert [r for r, _, _ in path_of(data)] == ["assistant", "user"]


def test_an_unknown_character_is_named_in_the_error(data: Path) -> None:
    result = CliRunner().invoke(app, ["chat", "Nobody", "--say", "Hi", "--data", str(data)])
    assert result.exit_code != 0
    assert "Nobody" in str(result.exception) and "Ione Calder" in str(result.exception)


def test_a_terminal_session_swipes_hides_edits_branches_and_shows_the_prompt(
    data: Path, stub: StubServer
) -> None:
    stub.script(Reply(tokens=["First."]), Reply(tokens=["Second."]))
    session = "\n".join(
        [
            "Hello",
            "/swipe",
            "/hide 0",
            "/edit 1 Hello there",
            "/branch side",
            "/prompt",
            "/quit",
            "",
        ]
    )
    result = CliRunner().invoke(app, ["chat", "Ione Calder", "--data", str(data)], input=session)
    assert result.exit_code == 0, result.output
    assert "First." in result.output and "Second." in result.output
    assert "on branch 'side'" in result.output
    assert "history" in result.output and "total" in result.output  # the ledger
    path = path_of(data)
    assert path[0][2] is True  # the greeting is hidden
    assert path[1] == ("user", "Hello there", False)
    assert path[2] == ("assistant", "Second.", False)
    swipe_request = stub.requests[-1].body["messages"]
    assert all(m["content"] != "First." for m in swipe_request)
    assert swipe_request[-1]["content"] == "Hello"


def test_prompt_before_any_reply_shows_the_next_prompt(data: Path) -> None:
    result = CliRunner().invoke(
        app, ["chat", "Ione Calder", "--data", str(data)], input="/prompt\n/quit\n"
    )
    assert result.exit_code == 0, result.output
    assert "the prompt the next reply would get" in result.output
    assert "history" in result.output


def test_continue_prefills_where_the_api_allows_and_nudges_elsewhere(
    data: Path, stub: StubServer
) -> None:
    import asyncio

    from taverna.server.context import open_context

    ctx = open_context(data)
    try:
        ctx.services["connections"].add(
            "claude", "anthropic", url=stub.base_url("anthropic"), model="stub-model", key=KEY
        )
        chat_id = taverna.cli.chat.open_chat(ctx, "Ione Calder", None)
        service = ctx.services["generation"]
        stub.script(
            Reply(tokens=["The river"]), Reply(tokens=[" bends."]), Reply(tokens=[" Left."])
        )

        async def main() -> None:
            await (await service.send(chat_id, "Which way?")).wait()
            await (await service.continue_reply(chat_id, connection="claude")).wait()
            await (await service.continue_reply(chat_id)).wait()

        asyncio.run(main())
        claude, openai = stub.requests[-2].body, stub.requests[-1].body
        assert claude["messages"][-1] == {"role": "assistant", "content": "The river"}
        assert "Continue" in openai["messages"][-1]["content"]  # the nudge
        assert ctx.chats.active_path(chat_id).leaf.content == "The river bends. Left."
    finally:
        ctx.close()


def test_tools_declared_in_the_active_preset_are_offered_and_run(
    data: Path, stub: StubServer
) -> None:
    import asyncio

    from taverna.server.context import open_context
    from taverna.services.library.active_settings import set_active
    from taverna.services.library.service import LibraryKind

    ctx = open_context(data)
    try:
        preset = ctx.store.put_document(
            LibraryKind.CHAT_COMPLETION_PRESET.value,
            "With dice",
            {"function_calling": True, "tools": ["roll_dice"]},
        )
        set_active(ctx.store, "chat_completion_preset", preset.id)
        chat_id = taverna.cli.chat.open_chat(ctx, "Ione Calder", None)
        stub.script(
            Reply(tokens=["Rolling."], tool_calls=[("roll_dice", {"formula": "1d6"})]),
            Reply(tokens=["You rolled well."]),
        )

        async def main() -> None:
            await (await ctx.services["generation"].send(chat_id, "Roll for me")).wait()

        asyncio.run(main())
        offered = stub.requests[-2].body["tools"][0]["function"]["name"]
        result = json.loads(stub.requests[-1].body["messages"][-1]["content"])
        assert offered == "roll_dice" and 1 <= result["total"] <= 6
        nodes = ctx.chats.active_path(chat_id).nodes
        assert nodes[-1].content == "You rolled well."
        assert nodes[-2].hidden and nodes[-2].extras["tool_invocations"][0]["name"] == "roll_dice"
    finally:
        ctx.close()


def test_the_presets_claude_system_prompt_setting_reaches_the_request(
    data: Path, stub: StubServer
) -> None:
    import asyncio

    from taverna.server.context import open_context
    from taverna.services.library.active_settings import set_active
    from taverna.services.library.service import LibraryKind

    ctx = open_context(data)
    try:
        ctx.services["connections"].add(
            "claude", "anthropic", url=stub.base_url("anthropic"), model="stub-model", key=KEY
        )
        preset = ctx.store.put_document(
            LibraryKind.CHAT_COMPLETION_PRESET.value, "Sys", {"claude_use_sysprompt": True}
        )
        set_active(ctx.store, "chat_completion_preset", preset.id)
        chat_id = taverna.cli.chat.open_chat(ctx, "Ione Calder", None)
        stub.script(Reply(tokens=["Yes."]), Reply(tokens=["Again."]))
        service = ctx.services["generation"]

        async def main() -> None:
            await (await service.send(chat_id, "Hi", connection="claude")).wait()

        asyncio.run(main())
        assert "Ione Calder" in stub.requests[-1].body["system"]
        # a connection that says otherwise wins over the preset
        ctx.services["connections"].add(
            "claude", "anthropic", url=stub.base_url("anthropic"), model="stub-model",
            key=KEY, options={"use_system_prompt": False},
        )  # fmt: skip
        asyncio.run(main())
        assert "system" not in stub.requests[-1].body
    finally:
        ctx.close()


def test_a_mistral_connection_added_on_the_command_line_runs_a_turn(
    data: Path, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MISTRAL_TEST_KEY", KEY)
    runner = CliRunner()
    added = runner.invoke(
        app,
        ["connection", "add", "mist", "--api", "mistral", "--url", stub.base_url("mistral"),
         "--model", "stub-model", "--key-env", "MISTRAL_TEST_KEY", "--set", "prefix=true",
         "--data", str(data)],
    )  # fmt: skip
    assert added.exit_code == 0, added.output
    assert "mistral" in added.output and KEY not in added.output
    stub.script(Reply(tokens=["Aboard", "."]))
    said = runner.invoke(
        app, ["chat", "Ione Calder", "--say", "Hi", "--connection", "mist", "--data", str(data)]
    )
    assert said.exit_code == 0, said.output
    assert said.output.strip() == "Aboard."
    assert stub.problems == []
    body = stub.requests[-1].body
    assert body["safe_prompt"] is False
    assert all(set(m) <= {"role", "content"} for m in body["messages"])
    assert body["messages"][-1] == {"role": "user", "content": body["messages"][-1]["content"]}


def test_quick_replies_run_on_their_triggers_in_the_terminal_chat(
    data: Path, stub: StubServer
) -> None:
    from taverna.model.quick_reply import QuickReplySet
    from taverna.services.chats.service import ChatService
    from taverna.services.scripts.quick_replies import QuickReplyService

    with open_data(data) as opened:
        service = QuickReplyService(ChatService(opened.store))
        replies = [
            {"id": 1, "label": "New", "message": "/sys A new chat begins.", "executeOnNewChat": True},
            {"id": 2, "label": "Open", "message": "/addvar key=seen open,", "executeOnChatChange": True},
            {"id": 3, "label": "Asked", "message": "/incvar asked", "executeOnUser": True},
            {"id": 4, "label": "Count", "message": "/incvar replies", "executeOnAi": True},
            {"id": 5, "label": "Button", "message": "/incvar never"},
        ]  # fmt: skip
        service.save(QuickReplySet.from_json({"version": 2, "name": "Auto", "qrList": replies}))
        service.set_global(["Auto"])
    stub.script(Reply(tokens=["Aboard."]), Reply(tokens=[" Quickly."]))
    session = "Take me home\n/continue\n/quit\n"
    result = CliRunner().invoke(app, ["chat", "Ione Calder", "--data", str(data)], input=session)
    assert result.exit_code == 0, result.output
    with open_data(data) as opened:
        [listing] = opened.store.list_chats()
        chats = ChatService(opened.store)
        nodes = chats.active_path(listing.chat.id).nodes
        variables = dict(chats.state_at(listing.chat.id).variables)
    assert [n.content for n in nodes][1:] == [
        "A new chat begins.",
        "Take me home",
        "Aboard. Quickly.",
    ]
    assert variables == {"seen": "open,", "asked": 1, "replies": 2}
    # Opened again: no new chat this time, the chat change runs again.
    again = CliRunner().invoke(app, ["chat", "Ione Calder", "--data", str(data)], input="/quit\n")
    assert again.exit_code == 0, again.output
    with open_data(data) as opened:
        [listing] = opened.store.list_chats()
        chats = ChatService(opened.store)
        assert len(chats.active_path(listing.chat.id).nodes) == 4
        assert dict(chats.state_at(listing.chat.id).variables)["seen"] == "open,open,"
