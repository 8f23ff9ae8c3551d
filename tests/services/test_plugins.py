"""Events, generation interceptors, plugins with grants and user tools, through the real
services over a data folder, against a stub speaking OpenAI's wire protocol. The plugins
are real modules (tests/plugins) installed as a distribution with entry points."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from taverna.model.chat import NodeRole
from taverna.model.quick_reply import QuickReply, QuickReplySet, QuickReplyTool
from taverna.services.house.workspace import Workspace, open_workspace
from taverna.services.library.active_settings import set_active
from taverna.services.library.service import LibraryKind, LibraryService
from taverna.services.plugins import Event, EventName, Grant, Plugins
from taverna.services.scripts.quick_replies import QuickReplyService
from taverna.services.scripts.runner import ScriptService
from taverna.services.turns import Ending
from tests.plugins import mood, nosy
from tests.plugins.install import write_distribution
from tests.stubs import Reply, StubServer
from tests.support.folders import card_folder

KEY = "sk-plugin-test-key-12345678"

pytestmark = pytest.mark.stub_model(key=KEY)


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test plugins installed (their distribution on the path) for this test."""
    folder = write_distribution(tmp_path / "site")
    monkeypatch.syspath_prepend(str(folder))
    mood.seen.clear()
    nosy.refusals.clear()
    nosy.kinds.clear()
    return folder


@pytest.fixture
def ws(installed: Path, data: Path) -> Iterator[Workspace]:
    opened_ws = open_workspace(data, background_backups=False)
    try:
        yield opened_ws
    finally:
        opened_ws.close()


def new_chat(ws: Workspace) -> str:
    from taverna.services.chats.editing import start_chat

    doc = LibraryService(ws.store).find(LibraryKind.CHARACTER, "Ione Calder")
    assert doc is not None
    return start_chat(ws.chats, doc.id, title=None, owner="").id


def send(ws: Workspace, chat_id: str, text: str):  # type: ignore[no-untyped-def]
    async def main():  # type: ignore[no-untyped-def]
        return await (await ws.generation.send(chat_id, text)).wait()

    return asyncio.run(main())


def test_plugins_are_found_through_entry_points_with_their_grants(installed: Path) -> None:
    plugins = Plugins()
    plugins.load_entry_points()
    by_name = {p.name: p for p in plugins.list()}
    assert by_name["mood"].grants == {Grant.READ_CHATS, Grant.CHANGE_PROMPTS}
    assert by_name["mood"].distribution == "taverna-test-plugins"
    assert by_name["mood"].version == "1.0"
    assert set(by_name["mood"].hooks) == {
        "taverna_event",
        "taverna_generate_interceptor",
        "taverna_prompt_ready",
        "taverna_tools",
    }
    assert by_name["nosy"].grants == frozenset() and by_name["nosy"].error is None
    broken = by_name["broken"]
    assert broken.error is not None and "read_minds" in broken.error
    assert "grants" in broken.error  # names the field
    assert [c.plugin.name for c in plugins.calls("taverna_event")] == ["mood", "nosy"]
    # nosy asks to run last: mood's prompt handler comes first
    assert [c.plugin.name for c in plugins.calls("taverna_prompt_ready")] == ["mood", "nosy"]


def test_events_reach_plugins_in_order_and_grants_are_enforced(
    ws: Workspace, stub: StubServer
) -> None:
    chat_id = new_chat(ws)
    mood.seen.clear()
    nosy.kinds.clear()
    stub.script(Reply(tokens=["Welcome aboard."]))
    done = send(ws, chat_id, "Hello there")
    assert done.outcome is Ending.SAVED
    names = [name for name, chat, _ in mood.seen if chat == chat_id]
    assert names == [
        "generation_started",
        "message_sent",
        "message_received",
        "generation_ended",
    ]
    texts = {name: text for name, _, text in mood.seen}
    assert texts["message_sent"] == "Hello there"
    assert texts["message_received"] == "Welcome aboard."
    # the plugin without grants saw every event, but no text, key or chat
    assert nosy.kinds == names
    assert any(
        "plugin 'nosy' may not read the message text" in r and "'read_chats'" in r
        for r in nosy.refusals
    )
    assert any("may not see API keys" in r and "'see_keys'" in r for r in nosy.refusals)
    assert any("may not read chats" in r for r in nosy.refusals)
    assert any("may not change the prompt" in r for r in nosy.refusals)
    assert KEY not in " ".join(nosy.refusals)
    # the prompt handler of the granted plugin changed what was sent; nosy's did not
    sent = stub.requests[-1].body["messages"]
    assert sent[-1] == {"role": "system", "content": "Mood: keep it light."}
    assert all("nosy was here" not in m["content"] for m in sent)


def test_chat_edits_deletes_and_swipes_are_events(ws: Workspace, stub: StubServer) -> None:
    chat_id = new_chat(ws)
    assert [(n, c) for n, c, _ in mood.seen] == [("chat_id_changed", chat_id)]
    stub.script(Reply(tokens=["One."]))
    send(ws, chat_id, "Hi")
    path = ws.chats.active_path(chat_id)
    user = path.nodes[-2]
    mood.seen.clear()
    chat = ws.chats.edit(chat_id, user.id, "Hi again", revision=path.chat.revision).chat
    stub.script(Reply(tokens=["Two."]))

    async def swipe() -> None:
        await (await ws.generation.swipe(chat_id)).wait()

    asyncio.run(swipe())
    chat = ws.chats.get_chat(chat_id)
    first = ws.chats.candidates(chat_id, ws.chats.active_path(chat_id).nodes[-1].id)[0]
    chat = ws.chats.select_candidate(chat_id, first.id, revision=chat.revision).chat
    ws.chats.delete(chat_id, first.id, revision=chat.revision)
    assert [(n, t) for n, _, t in mood.seen] == [
        ("message_edited", "Hi again"),
        ("generation_started", ""),
        ("message_received", "Two."),
        ("generation_ended", "Two."),
        ("message_swiped", "One."),
        ("message_deleted", "One."),
    ]


def test_an_interceptor_changes_the_turns_copy_not_the_stored_chat(
    ws: Workspace, stub: StubServer
) -> None:
    chat_id = new_chat(ws)
    stub.script(Reply(tokens=["Noted."]))
    send(ws, chat_id, "The secret is under the floor")
    sent = json.dumps(stub.requests[-1].body["messages"])
    assert "The [redacted] is under the floor" in sent and "secret" not in sent
    stored = ws.chats.active_path(chat_id).nodes
    assert stored[-2].content == "The secret is under the floor"


def test_the_inspector_shows_the_prompt_as_the_handlers_left_it(
    ws: Workspace, stub: StubServer
) -> None:
    """The next prompt goes through the interceptors and the prompt handlers, and its
    ledger places the plugin's own message where it is sent; a past reply's record has
    the same ledger as its prompt was sent."""
    from taverna.services.turns.inspector import inspect_prompt

    chat_id = new_chat(ws)
    stub.script(Reply(tokens=["Noted."]))

    async def sent_and_recorded():  # type: ignore[no-untyped-def]
        # as the server sends: the prompt's record is kept once the reply is stored
        return await ws.follow_up(await ws.generation.send(chat_id, "The secret is here"))

    assert asyncio.run(sent_and_recorded()).outcome is Ending.SAVED
    ws.chats.append(
        chat_id, NodeRole.USER, "Another secret", revision=ws.chats.get_chat(chat_id).revision
    )
    view = inspect_prompt(ws.generation, chat_id, None)
    messages = view.prompt["messages"]
    assert messages[-1]["content"] == "Mood: keep it light."
    assert not any("secret" in m["content"] for m in messages)  # the interceptor's copy
    items = view.prompt["ledger"]["items"]
    line = next(i for i in items if i["kind"] == "plugin")
    assert (line["source"], line["position"]) == ("mood", len(messages) - 1)
    assert line["tokens"] > 0
    placed = [i["position"] for i in items if i["included"] and i["position"] is not None]
    assert max(placed) == len(messages) - 1 and placed == sorted(placed)
    reply = ws.chats.active_path(chat_id).nodes[-2]
    past = inspect_prompt(ws.generation, chat_id, reply.id)
    assert past.as_sent
    sent = past.prompt["messages"]
    line = next(i for i in past.prompt["ledger"]["items"] if i["kind"] == "plugin")
    assert line["position"] == len(sent) - 1 and sent[-1]["content"] == "Mood: keep it light."


def test_an_interceptor_aborts_with_its_reason_and_nothing_is_sent(
    ws: Workspace, stub: StubServer
) -> None:
    chat_id = new_chat(ws)
    before = len(stub.requests)
    done = send(ws, chat_id, "Say the FORBIDDEN thing")
    assert done.outcome is Ending.FAILED and done.cause == "aborted"
    assert done.error == (
        "the generation was aborted by plugin 'mood': the last message says a forbidden word"
    )
    assert len(stub.requests) == before
    # the person's message is kept, as SillyTavern keeps it; no reply
    assert ws.chats.active_path(chat_id).nodes[-1].content == "Say the FORBIDDEN thing"
    assert [n for n, _, _ in mood.seen if n.startswith("generation")][-1] == "generation_ended"


def test_the_inspector_says_who_would_abort_the_next_turn(ws: Workspace) -> None:
    """A turn an interceptor would abort is still shown as built, and its ledger says
    that nothing would be sent, by whom and why; a turn that goes ahead names no one."""
    from taverna.services.turns.inspector import inspect_prompt

    chat_id = new_chat(ws)
    revision = ws.chats.get_chat(chat_id).revision
    ws.chats.append(chat_id, NodeRole.USER, "All calm here", revision=revision)
    assert inspect_prompt(ws.generation, chat_id, None).prompt["ledger"]["aborted"] is None
    revision = ws.chats.get_chat(chat_id).revision
    ws.chats.append(chat_id, NodeRole.USER, "Say the FORBIDDEN thing", revision=revision)
    view = inspect_prompt(ws.generation, chat_id, None)
    assert view.prompt["ledger"]["aborted"] == {
        "by": "plugin 'mood'",
        "reason": "the last message says a forbidden word",
    }
    assert any("FORBIDDEN" in m["content"] for m in view.prompt["messages"])


def tool_preset(ws: Workspace) -> None:
    preset = ws.store.put_document(
        LibraryKind.CHAT_COMPLETION_PRESET.value, "With tools", {"function_calling": True}
    )
    set_active(ws.store, "chat_completion_preset", preset.id)


def weather_set(ws: Workspace) -> None:
    replies = QuickReplyService(ws.chats)
    replies.save(
        QuickReplySet(
            name="Tools",
            qr_list=[
                QuickReply(
                    id=1,
                    label="weather",
                    message="/setvar key=asked {{var::city}} | /pass sunny in {{var::city}}",
                    tool=QuickReplyTool(
                        name="weather",
                        description="The weather in a city.",
                        parameters={
                            "type": "object",
                            "properties": {"city": {"type": "string"}},
                            "required": ["city"],
                        },
                    ),
                )
            ],
        )
    )
    replies.set_global(["Tools"])


def test_a_quick_reply_tool_is_offered_run_in_the_sandbox_and_stored(
    ws: Workspace, stub: StubServer
) -> None:
    tool_preset(ws)
    weather_set(ws)
    chat_id = new_chat(ws)
    stub.script(
        Reply(tokens=["Checking."], tool_calls=[("weather", {"city": "Oslo"})]),
        Reply(tokens=["Sunny today."]),
    )
    done = send(ws, chat_id, "Weather in Oslo?")
    assert done.outcome is Ending.SAVED, done.error
    offered = [t["function"]["name"] for t in stub.requests[-2].body["tools"]]
    assert sorted(offered) == ["count_words", "weather"]  # the Quick Reply's and the plugin's
    weather = next(t for t in stub.requests[-2].body["tools"] if t["function"]["name"] == "weather")
    assert weather["function"]["parameters"]["required"] == ["city"]
    assert stub.requests[-1].body["messages"][-1]["content"] == "sunny in Oslo"
    nodes = ws.chats.active_path(chat_id).nodes
    assert nodes[-1].content == "Sunny today."
    step = nodes[-2]
    assert step.hidden and step.extras["tool_invocations"][0] == {
        "id": step.extras["tool_invocations"][0]["id"],
        "name": "weather",
        "arguments": json.dumps({"city": "Oslo"}),
        "result": "sunny in Oslo",
    }
    # the script ran in the chat: its variable is there
    assert ScriptService(ws.chats).chat_variables(chat_id)["asked"] == "Oslo"


def test_a_swipe_branches_above_the_tool_steps_of_the_reply_it_stands_beside(
    ws: Workspace, stub: StubServer
) -> None:
    """A swipe of a reply that called tools goes where that reply's steps began, beside
    them: its path has none of the old reply's calls, and the old reply keeps its steps
    on its branch."""
    tool_preset(ws)
    weather_set(ws)
    chat_id = new_chat(ws)
    stub.script(
        Reply(tokens=["Checking."], tool_calls=[("weather", {"city": "Oslo"})]),
        Reply(tokens=["Sunny today."]),
    )
    assert send(ws, chat_id, "Weather in Oslo?").outcome is Ending.SAVED
    first = ws.chats.active_path(chat_id).nodes
    asked, old_step, old_reply = first[-3], first[-2], first[-1]

    async def swipe():  # type: ignore[no-untyped-def]
        return await (await ws.generation.swipe(chat_id)).wait()

    def steps() -> list[str]:
        path = ws.chats.active_path(chat_id).nodes
        return [c["arguments"] for n in path for c in n.extras.get("tool_invocations", [])]

    stub.script(Reply(tokens=["No need to check."]))
    assert asyncio.run(swipe()).outcome is Ending.SAVED
    path = ws.chats.active_path(chat_id).nodes
    assert path[-1].content == "No need to check." and path[-2].id == asked.id
    assert steps() == []
    entry = ws.chats.active_path(chat_id).entries[-1]
    assert (entry.candidate_index, entry.candidate_count) == (1, 2)
    # the old reply is still there, below its own step
    kept = ws.store.get_node(chat_id, old_reply.id)
    assert not kept.deleted and kept.parent_id == old_step.id
    assert not ws.store.get_node(chat_id, old_step.id).deleted

    # back to the first candidate: the old reply with its own call
    revision = ws.chats.get_chat(chat_id).revision
    ws.chats.select_candidate(chat_id, old_step.id, revision=revision)
    path = ws.chats.active_path(chat_id).nodes
    assert [n.id for n in path[-3:]] == [asked.id, old_step.id, old_reply.id]
    assert steps() == [json.dumps({"city": "Oslo"})]


def test_a_tools_variables_follow_its_reply_and_not_a_regenerated_one(
    ws: Workspace, stub: StubServer
) -> None:
    """What a tool's script sets is recorded on the reply it served: the message replied
    to keeps its own variables, and a regenerated reply whose model calls no tool has
    none of the discarded reply's tool effects."""
    tool_preset(ws)
    weather_set(ws)
    chat_id = new_chat(ws)
    stub.script(
        Reply(tokens=["Checking."], tool_calls=[("weather", {"city": "Oslo"})]),
        Reply(tokens=["Sunny today."]),
    )
    done = send(ws, chat_id, "Weather in Oslo?")
    assert done.outcome is Ending.SAVED, done.error
    nodes = ws.chats.active_path(chat_id).nodes
    asked = nodes[-3]
    assert asked.content == "Weather in Oslo?"
    assert "asked" not in ws.chats.state_at(chat_id, asked.id).variables
    assert ws.chats.state_at(chat_id, nodes[-1].id).variables["asked"] == "Oslo"

    async def regenerate():  # type: ignore[no-untyped-def]
        return await (await ws.generation.regenerate(chat_id)).wait()

    def steps() -> list[str]:
        path = ws.chats.active_path(chat_id).nodes
        return [c["arguments"] for n in path for c in n.extras.get("tool_invocations", [])]

    assert steps() == [json.dumps({"city": "Oslo"})]
    stub.script(Reply(tokens=["No need to check."]))
    again = asyncio.run(regenerate())
    assert again.outcome is Ending.SAVED, again.error
    path = ws.chats.active_path(chat_id).nodes
    assert path[-1].content == "No need to check." and path[-2].id == asked.id
    assert steps() == []  # the discarded reply's tool step went with it
    assert "asked" not in ScriptService(ws.chats).chat_variables(chat_id)
    # A regenerated reply that calls the tool again records its own call's effects.
    stub.script(
        Reply(tokens=["Checking."], tool_calls=[("weather", {"city": "Rome"})]),
        Reply(tokens=["Warm."]),
    )
    third = asyncio.run(regenerate())
    assert third.outcome is Ending.SAVED, third.error
    assert ScriptService(ws.chats).chat_variables(chat_id)["asked"] == "Rome"
    path = ws.chats.active_path(chat_id).nodes
    assert path[-1].content == "Warm." and path[-3].id == asked.id
    assert steps() == [json.dumps({"city": "Rome"})]  # the regenerated reply's own call
    assert "asked" not in ws.chats.state_at(chat_id, asked.id).variables


def test_a_regenerated_replys_tool_starts_from_the_variables_before_the_old_reply(
    ws: Workspace, stub: StubServer
) -> None:
    """A tool's script reads the variables the new reply starts from: a regenerate's
    script does not see what the discarded reply's own tool call set."""
    tool_preset(ws)
    replies = QuickReplyService(ws.chats)
    replies.save(
        QuickReplySet(
            name="Tally",
            qr_list=[
                QuickReply(
                    id=1,
                    label="tally",
                    message="/addvar key=calls 1 | /getvar calls",
                    tool=QuickReplyTool(name="tally", description="Counts the calls."),
                )
            ],
        )
    )
    replies.set_global(["Tally"])
    chat_id = new_chat(ws)
    counted = (Reply(tokens=["Counting."], tool_calls=[("tally", {})]), Reply(tokens=["Done."]))
    stub.script(*counted)
    assert send(ws, chat_id, "Count").outcome is Ending.SAVED
    assert ScriptService(ws.chats).chat_variables(chat_id)["calls"] == 1
    before = len(stub.requests)

    async def regenerate():  # type: ignore[no-untyped-def]
        return await (await ws.generation.regenerate(chat_id)).wait()

    stub.script(*counted)
    assert asyncio.run(regenerate()).outcome is Ending.SAVED
    assert stub.requests[before + 1].body["messages"][-1]["content"] == "1"
    assert ScriptService(ws.chats).chat_variables(chat_id)["calls"] == 1


def test_a_failing_tool_script_is_reported_to_the_model_and_rounds_stop_at_five(
    ws: Workspace, stub: StubServer
) -> None:
    tool_preset(ws)
    replies = QuickReplyService(ws.chats)
    replies.save(
        QuickReplySet(
            name="Loop",
            qr_list=[
                QuickReply(
                    id=1,
                    label="spin",
                    message="/while left=1 right=1 {: /pass x :}",
                    tool=QuickReplyTool(name="spin", description="Spins."),
                )
            ],
        )
    )
    replies.set_global(["Loop"])
    chat_id = new_chat(ws)
    looping = Reply(tokens=["again"], tool_calls=[("spin", {})])
    stub.script(*[looping] * 5, Reply(tokens=["Done."]))
    before = len(stub.requests)
    done = send(ws, chat_id, "Spin")
    assert done.outcome is Ending.SAVED, done.error
    sent = stub.requests[before:]
    assert len(sent) == 6 and "tools" not in sent[5].body
    result = sent[1].body["messages"][-1]["content"]
    assert result.startswith("error:") and "spin" in result
    assert ws.chats.active_path(chat_id).nodes[-1].content == "Done."


def test_a_quick_reply_runs_on_an_event_but_not_on_its_own_writes(
    ws: Workspace, stub: StubServer
) -> None:
    replies = QuickReplyService(ws.chats)
    replies.save(
        QuickReplySet(
            name="Watch",
            qr_list=[
                QuickReply(
                    id=1,
                    label="on edit",
                    message="/addvar key=edits 1 | /setvar key=last {{var::message_id}}"
                    " | /sys an edit was seen",
                    execute_on_events=["message_edited"],
                )
            ],
        )
    )
    replies.set_global(["Watch"])
    chat_id = new_chat(ws)
    greeting = ws.chats.active_path(chat_id)
    ws.chats.edit(chat_id, greeting.nodes[0].id, "Hello.", revision=greeting.chat.revision)
    assert ws.automations is not None
    ws.automations.wait()
    variables = ScriptService(ws.chats).chat_variables(chat_id)
    assert variables["last"] == greeting.nodes[0].id and variables["edits"] in (1, "1")
    assert ws.chats.active_path(chat_id).nodes[-1].content == "an edit was seen"
    assert list(ws.automations.ran) == [("message_edited", chat_id, "Watch.on edit")]


def test_a_quick_reply_set_made_global_later_runs_on_the_next_event(
    ws: Workspace, stub: StubServer
) -> None:
    """What the automations keep between events (the chat's account, the global sets of
    a settings version) follows a set stored, then made global, then taken off."""
    assert ws.automations is not None
    chat_id = new_chat(ws)
    greeting = ws.chats.active_path(chat_id)
    node = greeting.nodes[0].id
    ws.chats.edit(chat_id, node, "One.", revision=greeting.chat.revision)
    ws.automations.wait()  # no set stored yet: nothing ran
    replies = QuickReplyService(ws.chats)
    replies.save(
        QuickReplySet(
            name="Watch",
            qr_list=[
                QuickReply(
                    id=1,
                    label="on edit",
                    message="/addvar key=edits 1",
                    execute_on_events=["message_edited"],
                )
            ],
        )
    )
    revision = ws.chats.get_chat(chat_id).revision
    ws.chats.edit(chat_id, node, "Two.", revision=revision)
    ws.automations.wait()  # stored, active nowhere: nothing ran
    assert list(ws.automations.ran) == []
    replies.set_global(["Watch"])
    revision = ws.chats.get_chat(chat_id).revision
    ws.chats.edit(chat_id, node, "Three.", revision=revision)
    ws.automations.wait()
    assert list(ws.automations.ran) == [("message_edited", chat_id, "Watch.on edit")]
    replies.set_global([])
    revision = ws.chats.get_chat(chat_id).revision
    ws.chats.edit(chat_id, node, "Four.", revision=revision)
    ws.automations.wait()
    assert len(ws.automations.ran) == 1


def test_a_failing_listener_does_not_undo_the_write(ws: Workspace) -> None:
    def explode(event: Event) -> None:
        raise RuntimeError("listener bug")

    off = ws.events.on(EventName.MESSAGE_EDITED, explode)
    try:
        chat_id = new_chat(ws)
        path = ws.chats.active_path(chat_id)
        ws.chats.edit(chat_id, path.nodes[0].id, "Changed.", revision=path.chat.revision)
        assert ws.chats.active_path(chat_id).nodes[0].content == "Changed."
    finally:
        off()


def test_taverna_plugins_lists_them_and_taverna_chat_emits_events(
    tmp_path: Path, stub: StubServer, installed: Path
) -> None:
    from typer.testing import CliRunner

    import taverna.cli.chat
    import taverna.cli.plugins
    from taverna.cli.main import app

    listed = CliRunner().invoke(app, ["plugins"])
    assert listed.exit_code == 0, listed.output
    assert "mood 1.0 (tests.plugins.mood)" in listed.output
    assert "grants: change_prompts, read_chats" in listed.output
    assert "grants: none" in listed.output  # nosy
    assert "not loaded: plugin broken: field 'grants': unknown grant 'read_minds'" in listed.output
    as_json = json.loads(CliRunner().invoke(app, ["plugins", "--json"]).output)
    assert [p["name"] for p in as_json] == ["broken", "mood", "nosy"]

    folder = card_folder(tmp_path / "cli-data", stub)
    stub.script(Reply(tokens=["Aye."]))
    said = CliRunner().invoke(
        app, ["chat", "Ione Calder", "--say", "Keep the secret", "--data", str(folder)]
    )
    assert said.exit_code == 0, said.output
    assert [n for n, _, _ in mood.seen] == [
        "chat_id_changed",  # the chat `taverna chat` started
        "generation_started",
        "message_sent",
        "message_received",
        "generation_ended",
    ]
    sent = stub.requests[-1].body["messages"]
    assert sent[-2]["content"] == "Keep the [redacted]"
    assert sent[-1]["content"] == "Mood: keep it light."
    assert taverna.cli.chat is not None


class Oracle:
    """A plugin object registered in the process, granted to call models and see keys."""

    TAVERNA_GRANTS = ("read_chats", "call_models", "see_keys")


def test_granted_capabilities_work_and_others_are_refused(ws: Workspace, stub: StubServer) -> None:
    from taverna.services.plugins import GrantRefused

    chat_id = new_chat(ws)
    oracle = ws.events.plugins.register(Oracle(), "oracle")
    host = ws.events.host(oracle)
    assert host.api_key() == KEY
    assert host.chat_messages(chat_id)[0]["role"] == "assistant"
    stub.script(Reply(tokens=["A ", "fair ", "wind."]))
    assert asyncio.run(host.generate(chat_id, "Forecast?")) == "A fair wind."
    assert stub.requests[-1].body["messages"][-1] == {"role": "user", "content": "Forecast?"}
    assert len(ws.chats.active_path(chat_id).nodes) == 1  # nothing stored

    [nosy_info] = [p for p in ws.plugins.list() if p.name == "nosy"]
    refused = ws.events.host(nosy_info)
    before = len(stub.requests)
    with pytest.raises(GrantRefused, match=r"plugin 'nosy' may not call models.*'call_models'"):
        asyncio.run(refused.generate(chat_id, "Forecast?"))
    assert len(stub.requests) == before


def test_a_plugin_acting_for_one_account_reads_no_other_accounts_chat(ws: Workspace) -> None:
    """The host handed over with an event acts for the account owning that event's
    chat: another account's chat is answered as one that does not exist."""
    from taverna.errors import NotFound
    from taverna.model.chat import CharacterRef
    from taverna.services.plugins import hookimpl

    def chat_of(owner: str, text: str) -> str:
        made = ws.chats.create_chat(
            "c", characters=[CharacterRef("Mira")], greetings=(text,), owner=owner
        )
        return made.chat.id

    ann, bob, shared = chat_of("ann", "Ann's"), chat_of("bob", "Bob's"), chat_of("", "Open")
    oracle = ws.events.plugins.register(Oracle(), "oracle-accounts")
    for_ann = ws.events.host(oracle, ann)
    assert for_ann.chat_messages(ann)[0]["text"] == "Ann's"
    for chat_id in (bob, shared):
        with pytest.raises(NotFound, match="no chat"):
            for_ann.chat_messages(chat_id)
    with pytest.raises(NotFound, match="no chat"):
        asyncio.run(for_ann.generate(bob, "Forecast?"))
    with pytest.raises(NotFound, match="no chat"):
        for_ann.api_key(chat_id=bob)
    assert ws.events.host(oracle, bob).chat_messages(bob)[0]["text"] == "Bob's"
    # Outside a chat (the tools a plugin offers) the host reads only account-less chats.
    no_one = ws.events.host(oracle)
    assert no_one.chat_messages(shared)[0]["text"] == "Open"
    with pytest.raises(NotFound):
        no_one.chat_messages(ann)
    # An event of Ann's chat hands the plugin a host acting for Ann.
    seen: list[str] = []

    class Reader:
        TAVERNA_GRANTS = ("read_chats",)

        @hookimpl
        def taverna_event(self, event: Any, host: Any) -> None:
            if event.chat_id == ann:
                for chat_id in (ann, bob):
                    try:
                        seen.append(host.chat_messages(chat_id)[0]["text"])
                    except NotFound:
                        seen.append(f"refused {chat_id == bob}")

    ws.events.plugins.register(Reader(), "reader")
    ws.chats.append(ann, NodeRole.USER, "hi", revision=ws.chats.get_chat(ann).revision)
    assert seen[:2] == ["Ann's", "refused True"]
