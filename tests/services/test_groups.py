"""Group chats through the real turn builder, a real store and a stub model server:
a round's speakers answer one after another, each with a prompt made for it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from taverna.formats.card_json import card_from_json
from taverna.formats.png_card import CardFile
from taverna.model.chat import NodeRole
from taverna.services.chats.groups import GroupService
from taverna.services.chats.service import ChatService
from taverna.services.connections.service import ConnectionService
from taverna.services.interchange.library_import import LibraryImport
from taverna.services.library.service import LibraryService
from taverna.services.turns import Ending, GenerationService
from taverna.services.turns.context import TurnContexts
from taverna.services.turns.paths import PathEnds
from taverna.store.sql import SqlStore
from taverna.store.testing import backends, temporary_store
from tests.stubs import Reply, StubServer, start_stub
from tests.support.folders import connect_stub

KEY = "sk-group-key-000000001"
CARDS = {
    "Alice": ("A cheerful baker.", "Hello, I am Alice."),
    "小雪": ("一个安静的画家。", "你好，我是小雪。"),
    "Bob": ("A grumpy smith.", ""),
}


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with start_stub(key=KEY) as server:
        yield server


@dataclass
class World:
    store: SqlStore
    chats: ChatService
    groups: GroupService
    service: GenerationService
    group_id: str
    chat_id: str
    stub: StubServer

    def path(self) -> list[tuple[str, str, str]]:
        return [
            (e.node.role.value, e.node.speaker, e.node.content)
            for e in self.chats.active_path(self.chat_id).entries
        ]

    def sent(self, index: int) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = self.stub.requests[index].body["messages"]
        return messages


def _card(name: str, description: str, greeting: str) -> CardFile:
    data = {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {"name": name, "description": description, "first_mes": greeting},
    }
    return CardFile(character=card_from_json(data, file=name), avatar=None)


@pytest.fixture(params=backends())
def world(request: pytest.FixtureRequest, tmp_path: Path, stub: StubServer) -> Iterator[World]:
    with temporary_store(request.param, tmp_path) as store:
        connections = connect_stub(ConnectionService(store, tmp_path), stub, anthropic=True)
        library = LibraryService(store)
        ids = [library.put_character(_card(n, *CARDS[n])).id for n in CARDS]
        chats = ChatService(store)
        groups = GroupService(chats)
        group = groups.create("Workshop", ids, settings={"activation_strategy": 1})
        chat = groups.start_chat(group.id, user_name="Alex")
        turns = TurnContexts(store, paths=PathEnds(store))
        service = GenerationService(store, connections, turns, chats=chats, paths=turns.paths)
        yield World(store, chats, groups, service, group.id, chat.id, stub)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_group_starts_with_each_members_greeting(world: World) -> None:
    assert world.path() == [
        ("assistant", "Alice", "Hello, I am Alice."),
        ("assistant", "小雪", "你好，我是小雪。"),
    ]


def test_a_list_round_has_every_member_answer_in_order_each_seeing_the_last(world: World) -> None:
    world.stub.script(
        Reply(tokens=["Alice here."]),
        Reply(tokens=["小雪在这里。"]),
        Reply(tokens=["Bob here.\nAlice: I speak for Alice too"]),
    )

    async def main() -> Any:
        found = await world.service.round(world.chat_id, "Hi all")
        assert found.task is not None
        await found.task
        return found

    found = run(main())
    assert found.speakers == ("Alice", "小雪", "Bob")
    assert [r.result.outcome for r in found.runs] == [Ending.SAVED] * 3
    assert world.path()[2:] == [
        ("user", "Alex", "Hi all"),
        ("assistant", "Alice", "Alice here."),
        ("assistant", "小雪", "小雪在这里。"),
        ("assistant", "Bob", "Bob here."),  # cut where it spoke for Alice
    ]
    # each prompt is the speaker's: Swap puts that member's card in, the group nudge names it
    first, second = world.sent(0), world.sent(1)
    text_first = json.dumps(first, ensure_ascii=False)
    text_second = json.dumps(second, ensure_ascii=False)
    assert "A cheerful baker." in text_first and "一个安静的画家。" not in text_first
    assert "一个安静的画家。" in text_second and "A cheerful baker." not in text_second
    assert "Alice here." in text_second  # the later speaker sees the earlier reply
    assert "only as 小雪" in second[-1]["content"]
    stops = world.stub.requests[0].body.get("stop") or []
    assert all("Alice" not in s for s in stops)


def test_a_muted_member_is_left_out_and_a_mention_speaks_first(world: World) -> None:
    world.groups.set_muted(world.group_id, "Alice", True)
    world.groups.update(world.group_id, {"activation_strategy": 0})
    world.stub.script(*[Reply(tokens=[f"reply {i}"]) for i in range(3)])

    async def main() -> Any:
        found = await world.service.round(world.chat_id, "Bob, 你觉得小雪的画怎么样？")
        assert found.task is not None
        await found.task
        return found

    found = run(main())
    assert "Alice" not in found.speakers
    assert found.speakers[:2] == ("Bob", "小雪")
    roles = [(role, who) for role, who, _ in world.path()[3:]]
    assert roles == [("assistant", "Bob"), ("assistant", "小雪")]


def test_a_forced_speaker_and_a_swipe_keep_their_member(world: World) -> None:
    world.stub.script(Reply(tokens=["Bob first."]), Reply(tokens=["Bob again."]))

    async def main() -> None:
        found = await world.service.round(world.chat_id, "Someone?", member="Bob")
        assert found.speakers == ("Bob",)
        await found.runs[0].wait()
        swiped = await world.service.swipe(world.chat_id)
        await swiped.wait()

    run(main())
    last = world.chats.active_path(world.chat_id).entries[-1]
    assert (last.node.speaker, last.node.content) == ("Bob", "Bob again.")
    assert (last.candidate_index, last.candidate_count) == (1, 2)


def test_stop_ends_the_round(world: World) -> None:
    world.stub.script(
        Reply(tokens=[f"w{i} " for i in range(40)], hold_after=2), Reply(tokens=["never"])
    )

    async def main() -> Any:
        found = await world.service.round(world.chat_id, "Go")
        await asyncio.sleep(0.3)
        await world.service.stop_round(found.id)
        assert found.task is not None
        await found.task
        return found

    found = run(main())
    assert len(found.runs) == 1 and found.done
    assert world.path()[-1][0] == NodeRole.USER.value


def test_a_sillytavern_group_file_imports_and_exports_unchanged(
    world: World, tmp_path: Path
) -> None:
    data = {
        "id": "1727900000000",
        "name": "Tavern crew",
        "members": ["Alice.png", "小雪.png"],
        "avatar_url": "",
        "allow_self_responses": True,
        "activation_strategy": 3,
        "generation_mode": 2,
        "disabled_members": ["小雪.png"],
        "chat_metadata": {"note_prompt": "x"},
        "fav": False,
        "chat_id": "Tavern crew - 2024-10-02@19h11m05s",
        "chats": ["Tavern crew - 2024-10-02@19h11m05s"],
        "auto_mode_delay": 7,
        "generation_mode_join_prefix": "<{{char}}>",
        "generation_mode_join_suffix": "</{{char}}>",
        "hideMutedSprites": True,
        "a_future_key": {"kept": [1, 2]},
    }
    path = tmp_path / "Tavern crew.json"
    path.write_text(json.dumps(data, ensure_ascii=False))
    report = LibraryImport(LibraryService(world.store)).import_file(path)
    stored = report.stored[0]
    assert json.loads(world.groups.export(stored.id)) == data
    group = world.groups.get(stored.id)
    assert group.to_json() == data and list(group.to_json()) == list(data)
    members = world.groups.members(group)
    assert [(m.name, m.muted) for m in members] == [("Alice", False), ("小雪", True)]
    assert all(m.character_id for m in members)


def test_a_member_with_its_own_connection_is_asked_through_it(world: World) -> None:
    world.groups.set_connection(world.group_id, "小雪", "claude")
    assert [m.connection for m in world.groups.members(world.groups.get(world.group_id))] == [
        None,
        "claude",
        None,
    ]
    world.stub.script(*[Reply(tokens=[f"reply {i}"]) for i in range(3)])

    async def main() -> None:
        found = await world.service.round(world.chat_id, "Hi")
        assert found.task is not None
        await found.task

    run(main())
    paths = [r.path for r in world.stub.requests]
    assert paths[0].endswith("/chat/completions") and paths[2].endswith("/chat/completions")
    assert paths[1].endswith("/messages")  # 小雪's reply, asked of Anthropic's API
    body = world.stub.requests[1].body
    assert "一个安静的画家。" in json.dumps(body, ensure_ascii=False)
    assert [who for _, who, _ in world.path()[3:]] == ["Alice", "小雪", "Bob"]


def test_an_auto_round_never_has_the_last_speaker_answer_itself(world: World) -> None:
    world.groups.update(world.group_id, {"activation_strategy": 0})
    assert world.path()[-1][1] == "小雪"
    world.stub.script(*[Reply(tokens=[f"reply {i}"]) for i in range(3)])

    async def main() -> Any:
        found = await world.service.round(world.chat_id, "", user_input=False)
        assert found.task is not None
        await found.task
        return found

    found = run(main())
    assert found.speakers and "小雪" not in found.speakers
    assert [role for role, _, _ in world.path()[2:]] == ["assistant"] * len(found.speakers)


def test_a_group_file_sillytavern_wrote_comes_back_byte_for_byte(world: World) -> None:
    from tests.conftest import shared_dir

    path = (
        shared_dir()
        / "fixtures"
        / "sillytavern"
        / "handmade"
        / "user-data"
        / "groups"
        / "1727532000123.json"
    )
    if not path.is_file():
        pytest.skip("the shared SillyTavern fixtures are not here")
    stored = LibraryImport(LibraryService(world.store)).import_file(path).stored[0]
    assert world.groups.export(stored.id) == path.read_bytes()


def test_a_group_chat_exports_with_each_members_card(world: World) -> None:
    from taverna.services.interchange import InterchangeService

    world.stub.script(*[Reply(tokens=[f"reply {i}"]) for i in range(3)])

    async def main() -> None:
        found = await world.service.round(world.chat_id, "Hi")
        assert found.task is not None
        await found.task

    run(main())
    lines = [
        json.loads(line)
        for line in InterchangeService(world.store).export_jsonl(world.chat_id).splitlines()
    ]
    messages = [m for m in lines if "mes" in m]
    assert messages[0].get("is_group") is True
    who = [(m["name"], m.get("original_avatar")) for m in messages]
    assert who == [
        ("Alice", "Alice.png"),
        ("小雪", "小雪.png"),
        ("Alex", None),
        ("Alice", "Alice.png"),
        ("小雪", "小雪.png"),
        ("Bob", "Bob.png"),
    ]


def test_a_member_with_its_own_preset_is_prompted_by_it(world: World) -> None:
    from taverna.services.library.service import LibraryKind
    from tests.conftest import shared_dir

    path = shared_dir() / "fixtures" / "sillytavern" / "presets" / "openai" / "Default.json"
    if not path.is_file():
        pytest.skip("the shared SillyTavern fixtures are not here")
    preset = json.loads(path.read_text())
    for prompt in preset["prompts"]:
        if prompt["identifier"] == "main":
            prompt["content"] = "Bob's own main prompt: write {{char}}'s reply in verse."
    stored = LibraryService(world.store).put(LibraryKind.CHAT_COMPLETION_PRESET, "Verse", preset)
    world.groups.set_preset(world.group_id, "Bob", stored.id)
    assert world.groups.members(world.groups.get(world.group_id))[2].preset == stored.id
    world.stub.script(*[Reply(tokens=[f"reply {i}"]) for i in range(3)])

    async def main() -> None:
        found = await world.service.round(world.chat_id, "Hi")
        assert found.task is not None
        await found.task

    run(main())
    sent = [json.dumps(r.body, ensure_ascii=False) for r in world.stub.requests]
    assert "Bob's own main prompt: write Bob's reply in verse." in sent[2]
    assert "own main prompt" not in sent[0] and "own main prompt" not in sent[1]


def test_a_quick_reply_on_member_draft_runs_before_each_member_writes(world: World) -> None:
    from taverna.model.quick_reply import QuickReply, QuickReplySet
    from taverna.services.scripts.quick_replies import QuickReplyService
    from taverna.services.scripts.quick_reply_events import QuickReplyAutomations

    replies = QuickReplyService(world.chats)
    replies.save(
        QuickReplySet(
            name="Stage",
            qr_list=[
                QuickReply(
                    id=1,
                    label="cue",
                    message="/inject id=cue position=chat depth=0 role=system"
                    " Cue: {{var::member}} speaks now.",
                    execute_on_group_member_draft=True,
                )
            ],
        )
    )
    replies.set_global(["Stage"])
    automations = QuickReplyAutomations(world.chats)
    world.stub.script(Reply(tokens=["Alice here."]), Reply(tokens=["小雪在这里。"]))
    try:

        async def main() -> Any:
            found = await world.service.round(world.chat_id, "Hi all")
            assert found.task is not None
            await found.task
            return found

        found = run(main())
    finally:
        automations.close()
    assert found.speakers[:2] == ("Alice", "小雪")
    first = json.dumps(world.sent(0), ensure_ascii=False)
    second = json.dumps(world.sent(1), ensure_ascii=False)
    assert "Cue: Alice speaks now." in first and "小雪 speaks" not in first
    assert "Cue: 小雪 speaks now." in second and "Alice speaks" not in second
    assert [name for name, *_ in automations.ran] == ["group_member_drafted"] * len(found.speakers)
