"""Group replies as SillyTavern cleans them, against a stub model: the speaker's own
`Name:` taken off, a line another member would say cut off, and a reply with nothing
left told as a failure (with its cause, which the page offers to try again), never
stored as an empty message."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from taverna.engine.group import clean_group_reply
from taverna.formats.card_json import card_from_json
from taverna.formats.png_card import CardFile
from taverna.services.chats import ChatService
from taverna.services.chats.groups import GroupService
from taverna.services.connections import ConnectionService
from taverna.services.library import LibraryService
from taverna.services.turns import Ending, GenerationService
from taverna.services.turns.context import TurnContexts
from taverna.services.turns.paths import PathEnds
from taverna.store.testing import temporary_store
from tests.stubs import Reply, StubServer, start_stub
from tests.support.folders import connect_stub

KEY = "sk-group-replies-0000001"


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with start_stub(key=KEY) as server:
        yield server


def _card(name: str) -> CardFile:
    data = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": name}}
    return CardFile(character=card_from_json(data, file=name), avatar=None)


@pytest.fixture
def world(tmp_path: Path, stub: StubServer) -> Iterator[tuple[GenerationService, ChatService, str]]:
    with temporary_store("sqlite", tmp_path) as store:
        connections = connect_stub(ConnectionService(store, tmp_path), stub, anthropic=True)
        ids = [LibraryService(store).put_character(_card(n)).id for n in ("Ann", "Bob")]
        chats = ChatService(store)
        groups = GroupService(chats)
        group = groups.create("Pair", ids, settings={"activation_strategy": 1})
        chat = groups.start_chat(group.id, user_name="Alex")
        turns = TurnContexts(store, paths=PathEnds(store))
        service = GenerationService(store, connections, turns, chats=chats, paths=turns.paths)
        yield service, chats, chat.id


def _round(world: tuple[GenerationService, ChatService, str]) -> list[Any]:
    service, _chats, chat_id = world

    async def main() -> list[Any]:
        found = await service.round(chat_id, "Hello both", member="Ann")
        assert found.task is not None
        await found.task
        return [run.result for run in found.runs]

    return asyncio.run(main())


def _last(world: tuple[GenerationService, ChatService, str]) -> tuple[str, str, str]:
    _service, chats, chat_id = world
    node = chats.active_path(chat_id).entries[-1].node
    return node.role.value, node.speaker, node.content


def test_the_speaker_s_own_name_is_taken_off(
    world: tuple[GenerationService, ChatService, str], stub: StubServer
) -> None:
    stub.script(Reply(tokens=["Ann: ", "Good morning."]))
    [done] = _round(world)
    assert done.outcome is Ending.SAVED
    assert _last(world) == ("assistant", "Ann", "Good morning.")


def test_a_line_of_another_member_is_cut(
    world: tuple[GenerationService, ChatService, str], stub: StubServer
) -> None:
    stub.script(Reply(tokens=["Good morning.\n", "Bob: And to you."]))
    [done] = _round(world)
    assert done.outcome is Ending.SAVED
    assert _last(world) == ("assistant", "Ann", "Good morning.")


@pytest.mark.parametrize("said", ["", "Ann:", "Bob: I answer for Ann."])
def test_an_empty_reply_is_told_not_stored(
    world: tuple[GenerationService, ChatService, str], stub: StubServer, said: str
) -> None:
    stub.script(Reply(tokens=[said] if said else []))
    [done] = _round(world)
    assert done.outcome is Ending.FAILED and done.cause == "empty_reply"
    assert "returned nothing for Ann" in (done.error or "")
    assert _last(world) == ("user", "Alex", "Hello both")  # no empty message stored


def test_cleaning_as_sillytavern_does() -> None:
    members = ("Ann", "Bob")
    assert clean_group_reply("Ann: Hi.\nAnn:  Again.", "Ann", members) == "Hi.\nAgain."
    assert clean_group_reply("Ann:\n  Hi.", "Ann", members) == "Hi."
    assert clean_group_reply("Hi. Ann: is my name", "Ann", members) == "Hi. Ann: is my name"
    assert clean_group_reply("Hi.\nBob: no", "Ann", members) == "Hi."
    assert clean_group_reply("Bob: no", "Ann", members) == ""
