"""Lorebook timers follow the path through real generations (ARCHITECTURE.md §1.3).

The prompt builder here is the assembly engine over the chat's path, reading the
state in force at the end of the path it replies to; the generation service records
the prompt's state on the new reply. algo-world-info.md §7 (sticky by messages),
algo-chat-ops.md §2.1 (swipes and branches).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from taverna.engine.assemble import assemble
from taverna.engine.assembly.context import (
    AssemblyContext,
    CharacterInfo,
    ChatMessage,
    ChatMetadata,
    GenerationType,
    Speaker,
)
from taverna.model.chat import CharacterRef, NodeRole, effective_state
from taverna.model.lorebook import DEFAULT_WORLD_INFO, Entry, Lorebook
from taverna.model.prompt import Prompt
from taverna.model.settings import PersonaInfo
from taverna.services.chats.service import ChatService
from taverna.services.connections.service import ConnectionService
from taverna.services.turns import Completed, GenerationService, TurnRequest
from taverna.store.sql import SqlStore
from taverna.store.testing import backends, temporary_store
from tests.stubs import Reply, StubServer
from tests.support.folders import connect_stub

KEY = "sk-generation-state-key-0001"
LORE = Lorebook(
    name="Lore",
    entries=(Entry(uid=1, key=("dragon",), content="DRAGON LORE", sticky=3),),
)
KINDS = {
    GenerationType.NORMAL: GenerationType.NORMAL,
    GenerationType.REGENERATE: GenerationType.REGENERATE,
    GenerationType.SWIPE: GenerationType.SWIPE,
    GenerationType.CONTINUE: GenerationType.CONTINUE,
    GenerationType.IMPERSONATE: GenerationType.IMPERSONATE,
}

pytestmark = pytest.mark.stub_model(key=KEY)


def lorebook_builder(prompts: list[Prompt], turns: list[TurnRequest]) -> Any:
    """Assembly over the path, with the state in force before the reply being made."""

    def build(turn: TurnRequest) -> Prompt:
        turns.append(turn)
        state = effective_state(turn.history, turn.chat.base_state)
        messages = tuple(
            ChatMessage(
                node.id,
                Speaker.USER if node.role is NodeRole.USER else Speaker.CHARACTER,
                node.speaker,
                node.content,
                hidden=node.hidden,
            )
            for node in turn.path
            if not node.deleted
        )
        context = AssemblyContext(
            characters=(CharacterInfo(name="Aria"),),
            messages=messages,
            persona=PersonaInfo(name="Alex"),
            metadata=ChatMetadata(
                variables=dict(state.variables),
                extras={"timedWorldInfo": dict(state.timers)},
            ),
            generation_type=KINDS[turn.kind],
            lorebooks={"Lore": LORE},
            world_info=replace(DEFAULT_WORLD_INFO, global_select=("Lore",), depth=1),
            tokenizer="estimate",
            dry_run=turn.dry_run,
        )
        prompt = assemble(context, counts=turn.counts)
        prompts.append(prompt)
        return prompt

    return build


@dataclass
class World:
    store: SqlStore
    chats: ChatService
    service: GenerationService
    chat_id: str
    prompts: list[Prompt]
    turns: list[TurnRequest]
    stub: StubServer

    def lore_sent(self) -> bool:
        return any("DRAGON LORE" in m.content for m in self.prompts[-1].messages)

    def sticky(self, node_id: str | None = None) -> dict[str, Any]:
        timers = self.chats.state_at(self.chat_id, node_id).timers
        return dict(timers.get("sticky") or {})

    def say(self, text: str) -> Completed:
        return self._wait(self.service.send(self.chat_id, text))

    def swipe(self) -> Completed:
        return self._wait(self.service.swipe(self.chat_id))

    def regenerate(self) -> Completed:
        return self._wait(self.service.regenerate(self.chat_id))

    def _wait(self, started: Any) -> Completed:
        async def main() -> Completed:
            done: Completed = await (await started).wait()
            return done

        self.stub.script(Reply(tokens=["Mm."]))
        return asyncio.run(main())


@pytest.fixture(params=backends())
def world(request: pytest.FixtureRequest, tmp_path: Path, stub: StubServer) -> Iterator[World]:
    with temporary_store(request.param, tmp_path) as store:
        connections = connect_stub(ConnectionService(store, tmp_path), stub)
        chats = ChatService(store)
        prompts: list[Prompt] = []
        turns: list[TurnRequest] = []
        service = GenerationService(
            store, connections, lorebook_builder(prompts, turns), chats=chats
        )
        chat = chats.create_chat(
            "Aria", characters=[CharacterRef("Aria")], user_name="Alex", greetings=["Welcome."]
        ).chat
        yield World(store, chats, service, chat.id, prompts, turns, stub)


def test_sticky_lasts_its_messages_across_real_turns(world: World) -> None:
    """sticky 3 from the scan at 2 messages: active at 2 and 4, ended at 6."""
    first = world.say("I see a dragon")
    assert world.lore_sent()
    assert world.sticky(first.node_id)["Lore.1"]["start"] == 2
    assert world.sticky(first.node_id)["Lore.1"]["end"] == 5
    world.say("Over there")  # no key in the scanned message: sticky keeps it in
    assert world.lore_sent()
    third = world.say("Bye")
    assert not world.lore_sent()
    assert "Lore.1" not in world.sticky(third.node_id)


def test_swipes_and_regenerates_do_not_advance_timers(world: World) -> None:
    world.say("I see a dragon")
    second = world.say("Over there")
    recorded = world.sticky(second.node_id)
    for _ in range(3):
        swiped = world.swipe()
        assert world.lore_sent()
        assert world.sticky(swiped.node_id) == recorded
    regenerated = world.regenerate()
    assert world.lore_sent()
    assert world.sticky(regenerated.node_id) == recorded
    world.say("Bye")  # only a longer path moves the clock
    assert not world.lore_sent()


def test_an_older_branch_brings_back_its_timers(world: World) -> None:
    first = world.say("I see a dragon")
    world.say("Over there")
    world.say("Bye")
    assert "Lore.1" not in world.sticky()  # ended on this path
    chat = world.store.get_chat(world.chat_id)
    world.chats.branch_from(world.chat_id, first.node_id or "", "back", revision=chat.revision)
    assert "Lore.1" in world.sticky()  # the branch's path still holds it
    world.say("Look up")
    assert world.lore_sent()


def test_a_preview_is_a_dry_run(world: World) -> None:
    """A preview neither reads timers (algo-world-info.md §4.1) nor writes anything."""
    world.say("I see a dragon")  # sticky until 5 messages; the path holds 3
    revision = world.store.get_chat(world.chat_id).revision
    preview = world.service.preview(world.chat_id)
    assert preview.state == {}
    assert not any("DRAGON LORE" in m.content for m in preview.messages)
    assert world.store.get_chat(world.chat_id).revision == revision


def test_every_turn_counts_with_the_services_cache(world: World) -> None:
    """One long-lived token-count cache: a turn tokenizes only what is new."""
    counts = world.service.counts
    world.say("I see a dragon")
    first = counts.misses
    world.say("Over there")
    assert all(turn.counts is counts for turn in world.turns)
    assert len(counts) > 0 and counts.hits > 0
    assert counts.misses - first < first
