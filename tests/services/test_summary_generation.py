"""Summaries made by a model: a stub model server speaking the real wire protocols."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from taverna.model.chat import CharacterRef, NodeRole
from taverna.model.injection import ExtensionPosition
from taverna.model.summary import SUMMARY_REPLY_TOKENS, SummaryBuilder, SummarySettings
from taverna.services.house.workspace import Workspace, open_workspace
from taverna.services.memory.summaries import SummaryService
from taverna.services.turns.summary_generation import (
    SummaryGenerator,
    raw_text,
    save_summary_settings,
    summary_due,
    summary_settings,
)
from tests.stubs import Reply, StubServer

KEY = "sk-test"
PROMPT_START = "Ignore previous instructions. Summarize the most important facts"

pytestmark = pytest.mark.stub_model(key=KEY, models=("stub-model", "cheap-model"))


@pytest.fixture
def ws(tmp_path: Path, stub: StubServer) -> Iterator[Workspace]:
    ws = open_workspace(tmp_path / "data", background_backups=False)
    ws.connections.add("stub", "openai", url=stub.base_url("openai"), model="stub-model", key=KEY)
    ws.connections.add("cheap", "openai", url=stub.base_url("openai"), model="cheap-model", key=KEY)
    ws.connections.add("llama", "llamacpp", url=stub.base_url("llamacpp"), model="", key=KEY)
    stub.clear()
    stub.requests.clear()
    try:
        yield ws
    finally:
        ws.close()


def _chat(ws: Workspace, *lines: str) -> str:
    out = ws.chats.create_chat(
        "Aria",
        characters=[CharacterRef("Aria")],
        user_name="Alex",
        greetings=["Welcome."],
        greeting_speaker="Aria",
    )
    chat_id = out.chat.id
    for i, line in enumerate(lines):
        role = NodeRole.USER if i % 2 == 0 else NodeRole.ASSISTANT
        speaker = "Alex" if role is NodeRole.USER else "Aria"
        rev = ws.chats.get_chat(chat_id).revision
        ws.chats.append(chat_id, role, line, speaker=speaker, revision=rev)
    return chat_id


def _generator(ws: Workspace) -> SummaryGenerator:
    assert ws.summaries is not None
    return ws.summaries


def _texts(messages: list[dict[str, Any]]) -> list[str]:
    return [str(m.get("content")) for m in messages]


def test_a_summary_on_demand_asks_with_its_own_length_and_is_placed_in_the_next_prompt(
    ws: Workspace, stub: StubServer
) -> None:
    chat_id = _chat(ws, "Where is the lighthouse?", "North, past the reeds.")
    stub.script(Reply(tokens=["Alex asked the way; ", "Aria said north."]))
    outcome = asyncio.run(_generator(ws).summarize(chat_id))
    assert outcome.text == "Alex asked the way; Aria said north." and not outcome.cut
    body = stub.requests[-1].body
    # classic: the chat's own prompt, the summary prompt last, as a quiet prompt
    last = body["messages"][-1]
    assert last["role"] == "system" and last["content"].startswith(PROMPT_START)
    assert "200 words or less" in last["content"]
    assert "North, past the reeds." in _texts(body["messages"])
    # its own reply limit, not the chat's 300 tokens
    assert body["max_tokens"] == SUMMARY_REPLY_TOKENS
    # recorded on the newest message it covers
    leaf = ws.chats.get_chat(chat_id).active_leaf_id
    assert outcome.node_id == leaf
    current = SummaryService(ws.chats).current(chat_id)
    assert current is not None and current.text == outcome.text and current.node_id == leaf

    # the next turn places it right after the main prompt (position 0, the default)
    stub.script(Reply(tokens=["Off we go."]))

    async def send() -> None:
        await (await ws.generation.send(chat_id, "Let's go.", connection="stub")).wait()

    asyncio.run(send())
    messages = stub.requests[-1].body["messages"]
    assert messages[1] == {"role": "system", "content": f"[Summary: {outcome.text}]"}


def test_raw_mode_sends_the_messages_since_the_last_summary_within_the_budget(
    ws: Workspace, stub: StubServer
) -> None:
    save_summary_settings(
        ws.store, replace(SummarySettings(), prompt_builder=SummaryBuilder.RAW_BLOCKING)
    )
    chat_id = _chat(ws, "One.", "Two.", "Three.")
    stub.script(Reply(tokens=["First summary."]))
    first = asyncio.run(_generator(ws).summarize(chat_id))
    body = stub.requests[-1].body
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][0]["content"].startswith(PROMPT_START)
    # the path's last message is left out, and the summary belongs to the last one sent
    assert body["messages"][1]["content"] == "Aria:\nWelcome.\n\nAlex:\nOne.\n\nAria:\nTwo."
    path = ws.chats.active_path(chat_id).nodes
    assert first.raw and first.node_id == path[-2].id

    rev = ws.chats.get_chat(chat_id).revision
    ws.chats.append(chat_id, NodeRole.ASSISTANT, "Four.", speaker="Aria", revision=rev)
    stub.script(Reply(tokens=["Second summary."]))
    asyncio.run(_generator(ws).summarize(chat_id))
    # the latest summary first, then only what came after it
    assert stub.requests[-1].body["messages"][1]["content"] == ("First summary.\n\nAlex:\nThree.")


def test_raw_text_stops_at_the_token_budget_and_the_message_limit(ws: Workspace) -> None:
    chat_id = _chat(ws, "a b c", "d e f", "g h i", "j k l")
    nodes = ws.chats.active_path(chat_id).nodes

    def words(text: str) -> int:
        return len(text.split())

    fitted = raw_text(nodes, "sys", 64 + 9, count=words)
    assert fitted.text == "Aria:\nWelcome.\n\nAlex:\na b c"
    assert fitted.last_node_id == nodes[1].id
    limited = raw_text(nodes, "sys", 10_000, max_messages=2, count=words)
    assert limited.last_node_id == nodes[1].id
    assert raw_text(nodes[:1], "sys", 10_000).last_node_id is None


def test_a_summary_cut_by_its_limit_is_continued_once_then_kept_and_flagged(
    ws: Workspace, stub: StubServer
) -> None:
    save_summary_settings(ws.store, replace(SummarySettings(), override_response_length=40))
    chat_id = _chat(ws, "Tell me everything.", "Everything is long.")
    stub.script(
        Reply(tokens=["It began when"], finish="length"), Reply(tokens=[" the tide turned."])
    )
    outcome = asyncio.run(_generator(ws).summarize(chat_id))
    assert not outcome.cut and outcome.text == "It began when the tide turned."
    # the continuation starts from what was said
    assert stub.requests[-1].body["messages"][-1] == {
        "role": "assistant",
        "content": "It began when",
    }
    assert stub.requests[-1].body["max_tokens"] == 40

    stub.script(
        Reply(tokens=["Again it"], finish="length"), Reply(tokens=[" went on"], finish="length")
    )
    outcome = asyncio.run(_generator(ws).summarize(chat_id))
    assert outcome.cut and outcome.text == "Again it went on"


def test_summaries_can_use_a_connection_of_their_own(ws: Workspace, stub: StubServer) -> None:
    save_summary_settings(ws.store, replace(SummarySettings(), connection="cheap"))
    chat_id = _chat(ws, "Hello.", "Hi.")
    stub.script(Reply(tokens=["They greeted."]))
    asyncio.run(_generator(ws).summarize(chat_id))
    assert stub.requests[-1].body["model"] == "cheap-model"


def test_a_text_completion_summary_asks_for_its_own_length(ws: Workspace, stub: StubServer) -> None:
    save_summary_settings(ws.store, replace(SummarySettings(), connection="llama"))
    chat_id = _chat(ws, "Hello.", "Hi.")
    stub.script(Reply(tokens=["They greeted."]))
    outcome = asyncio.run(_generator(ws).summarize(chat_id))
    body = stub.requests[-1].body
    assert outcome.text == "They greeted."
    assert body["n_predict"] == SUMMARY_REPLY_TOKENS
    assert PROMPT_START in body["prompt"]


def test_an_automatic_summary_follows_the_reply_every_n_messages(
    ws: Workspace, stub: StubServer
) -> None:
    save_summary_settings(ws.store, replace(SummarySettings(), prompt_interval=4))
    chat_id = _chat(ws, "One.")
    stub.script(Reply(tokens=["Two."]), Reply(tokens=["A summary."]), Reply(tokens=["Four."]))

    async def send(text: str) -> None:
        await (await ws.generation.send(chat_id, text, connection="stub")).wait()
        follow_up = ws.generation.follow_ups.get(chat_id)  # gone once it has ended
        if follow_up is not None:
            await follow_up

    asyncio.run(send("Hello."))
    # 4 messages: due, and made with the chat's connection after the reply was saved
    assert len(stub.requests) == 2
    current = SummaryService(ws.chats).current(chat_id)
    assert current is not None and current.text == "A summary."
    asyncio.run(send("Again."))
    # two messages since the summary: not due
    assert len(stub.requests) == 3


def test_words_since_the_last_summary_can_trigger_one(ws: Workspace) -> None:
    chat_id = _chat(ws, "one two three four five six", "seven")
    nodes = ws.chats.active_path(chat_id).nodes
    settings = replace(SummarySettings(), prompt_interval=3)
    assert summary_due(nodes, settings)  # 3 messages, none summarized
    assert not summary_due(nodes, replace(settings, frozen=True))
    # a chat shorter than the interval is never due (memory/index.js)
    assert not summary_due(nodes, replace(settings, prompt_interval=4, prompt_force_words=1))
    rev = ws.chats.get_chat(chat_id).revision
    SummaryService(ws.chats).record(chat_id, nodes[0].id, "A greeting.", revision=rev)
    nodes = ws.chats.active_path(chat_id).nodes
    # two messages and seven words since the summary
    assert not summary_due(nodes, settings)
    assert summary_due(nodes, replace(settings, prompt_force_words=7))
    assert not summary_due(nodes, replace(settings, prompt_force_words=8))


def test_sillytavern_settings_names_round_trip(ws: Workspace) -> None:
    data = {
        "source": "main",
        "prompt": "Sum up in {{words}} words.",
        "template": "<{{summary}}>",
        "position": "1",
        "depth": 3,
        "role": 2,
        "promptWords": 50,
        "promptInterval": 5,
        "promptForceWords": 300,
        "overrideResponseLength": 256,
        "maxMessagesPerRequest": 8,
        "prompt_builder": 2,
        "SkipWIAN": True,
        "memoryFrozen": False,
        "promptMinWords": 25,  # a UI bound SillyTavern keeps beside: kept too
    }
    settings = SummarySettings.from_st(data)
    assert settings.position is ExtensionPosition.IN_CHAT and settings.depth == 3
    assert settings.prompt_builder is SummaryBuilder.RAW_NON_BLOCKING and settings.skip_wi_an
    save_summary_settings(ws.store, settings)
    again = summary_settings(ws.store)
    assert again == settings
    assert again.to_st()["promptMinWords"] == 25 and again.to_st()["position"] == 1


def test_hiding_what_a_summary_covers_leaves_the_newest_and_comes_back_when_it_goes(
    ws: Workspace, stub: StubServer
) -> None:
    save_summary_settings(ws.store, replace(SummarySettings(), hide_covered=True, hide_keep=1))
    chat_id = _chat(ws, "We leave at dawn.", "I packed the rope.", "Good.", "Let's go.")
    nodes = ws.chats.active_path(chat_id).nodes
    summaries = SummaryService(ws.chats)
    rev = ws.chats.get_chat(chat_id).revision
    summaries.record(chat_id, nodes[3].id, "They packed and agreed to leave at dawn.", revision=rev)
    stub.script(Reply(tokens=["North."]), Reply(tokens=["North again."]))

    async def send(text: str) -> list[str]:
        await (await ws.generation.send(chat_id, text, connection="stub")).wait()
        return _texts(stub.requests[-1].body["messages"])

    sent = asyncio.run(send("Which way?"))
    assert "[Summary: They packed and agreed to leave at dawn.]" in sent
    # covered: the greeting and the next two hidden, the newest covered one kept
    for gone in ("Welcome.", "We leave at dawn.", "I packed the rope."):
        assert gone not in sent
    assert "Good." in sent and "Let's go." in sent and "Which way?" in sent
    # nothing was written: the messages are not hidden in the chat
    assert not any(n.hidden for n in ws.chats.active_path(chat_id).nodes)

    summaries.remove(chat_id, revision=ws.chats.get_chat(chat_id).revision)
    sent = asyncio.run(send("Are you sure?"))
    assert "Welcome." in sent and "We leave at dawn." in sent
    assert not any("[Summary:" in text for text in sent)
