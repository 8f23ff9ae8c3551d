"""A lorebook full of runaway regex keys cannot stall a turn: the turn's time for user
regexes runs out, the rest are skipped, and the prompt's ledger says which and why."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from taverna.model.chat import NodeRole
from taverna.model.lorebook import Entry, Lorebook
from taverna.services.chats.service import ChatService
from taverna.services.connections.service import ConnectionService
from taverna.services.library.service import LibraryService
from taverna.services.turns import Ending, GenerationService
from taverna.services.turns.context import TurnContexts
from taverna.store.sql import SqlStore, open_store
from tests.stubs import Reply, StubServer

KEYS = 200
# Each key alone stays within its 50 ms limit; 200 of them took most of a minute a turn.
TRAPS = tuple(f"/(a+)+$|q{i}z/" for i in range(KEYS))
LONG = "a" * 5000 + "b"
# Loose on purpose: a loaded two-core machine; without the turn's budget this took 10-40 s.
BOUND = 10.0


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqlStore]:
    opened = open_store(tmp_path / "data")
    yield opened
    opened.close()


def trapped_chat(store: SqlStore, *, say: bool) -> str:
    entries = tuple(Entry(uid=i, key=(key,), content=f"trap {i}") for i, key in enumerate(TRAPS))
    LibraryService(store).put_lorebook(Lorebook(name="Traps", entries=entries))
    chats = ChatService(store)
    chat = chats.create_chat("trapped", greetings=["Hello."], metadata={"world_info": "Traps"}).chat
    if say:
        chats.append(chat.id, NodeRole.USER, LONG, revision=chat.revision)
    return chat.id


def service(
    store: SqlStore, tmp_path: Path, stub: StubServer, budget: float | None
) -> GenerationService:
    turns = TurnContexts(store) if budget is None else TurnContexts(store, regex_budget=budget)
    connections = ConnectionService(store, tmp_path)
    connections.add("stub", "openai", url=stub.base_url("openai"), model="stub-model")
    return GenerationService(store, connections, turns, paths=turns.paths)


def test_a_reply_over_two_hundred_runaway_keys_is_not_held_up(
    store: SqlStore, tmp_path: Path, stub: StubServer
) -> None:
    chat_id = trapped_chat(store, say=False)
    generation = service(store, tmp_path, stub, None)
    stub.script(Reply(tokens=["Fine."]))

    async def send() -> Ending:
        run = await generation.send(chat_id, LONG)
        return (await run.wait()).outcome

    began = time.perf_counter()
    assert asyncio.run(send()) is Ending.SAVED
    assert time.perf_counter() - began < BOUND
    notes = generation.last_prompts[chat_id].ledger.skipped_regexes
    assert {n.source for n in notes} == {f"Traps/{i}" for i in range(KEYS)}
    assert "trap" not in str(stub.requests[-1].body["messages"])


def test_a_small_budget_skips_the_rest_and_lists_them(
    store: SqlStore, tmp_path: Path, stub: StubServer
) -> None:
    chat_id = trapped_chat(store, say=True)
    generation = service(store, tmp_path, stub, 0.1)
    prompt = generation.preview(chat_id, connection="stub")
    notes = prompt.ledger.skipped_regexes
    assert [n.pattern for n in notes] == list(TRAPS)  # in the scan's order, each once
    assert {n.kind for n in notes} == {"lorebook key"}
    not_run = [n for n in notes if n.reason.startswith("not run")]
    assert len(not_run) >= KEYS - 10
    assert all(
        n.reason == "not run: this turn's 100 ms for user regexes was spent; counted as no match"
        for n in not_run
    )
