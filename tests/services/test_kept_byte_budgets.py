"""What a process keeps between requests stays under a budget of bytes, however many chats,
rounds or accounts pass: finished group rounds, branch lists, the library's kept answers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from taverna.engine.assembly.context import GenerationType
from taverna.model.chat import ChatState, NodeRole, new_id
from taverna.services.chats import branches as chat_branches
from taverna.services.chats.service import ChatService
from taverna.services.kept_bytes import approx_bytes
from taverna.services.library.watch import Kept, LibraryWatch
from taverna.services.plugins import EventBus
from taverna.services.turns import rounds as turn_rounds
from taverna.services.turns.paths import PathEnds
from taverna.services.turns.rounds import GroupRounds, round_bytes
from taverna.services.turns.runs import (
    Completed,
    Ending,
    GenerationRegistry,
    GroupRound,
    RunningGeneration,
)
from taverna.store.sql import SqlStore, open_store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqlStore]:
    opened = open_store(tmp_path / "data")
    yield opened
    opened.close()


def _finished_round(text: str) -> GroupRound:
    run = RunningGeneration(new_id(), "chat", GenerationType.NORMAL)
    run.publish(Completed(Ending.SAVED, text, node_id=new_id(), revision=1))
    found = GroupRound(new_id(), "chat", ("Mira", "Élodie"), runs=[run])
    found.done = True
    return found


def test_finished_group_rounds_stay_under_their_byte_budget(
    store: SqlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    budget = 40 * round_bytes(_finished_round("word " * 40))
    monkeypatch.setattr(turn_rounds, "ROUNDS_BYTES", budget)

    async def unused(*_args: object, **_kwargs: object) -> RunningGeneration:
        raise AssertionError("no round here starts a speaker")

    chats = ChatService(store)
    pool = ThreadPoolExecutor(max_workers=1)
    rounds = GroupRounds(
        chats,
        PathEnds(store),
        EventBus(),
        GenerationRegistry(),
        send=unused,
        stop=unused,
        reader=pool,
        writer=pool,
    )
    live = GroupRound(new_id(), "chat", ("Mira",))
    rounds._remember(live)
    for number in range(300):
        # now and then a long one: it counts for many short ones
        rounds._remember(_finished_round("word " * (4000 if number % 50 == 0 else 40)))
        assert rounds.finished_held <= budget
    assert live.id in rounds.rounds  # a round still going is never let go
    assert 2 < len(rounds.rounds) <= 42
    pool.shutdown()


def test_branch_lists_stay_under_their_byte_budget(
    store: SqlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chat_branches, "BRANCH_LISTS_BYTES", 8_000)
    chats = ChatService(store)
    listed = []
    for number in range(40):
        chat = chats.create_chat(f"c{number}", greetings=["Hi."], base_state=ChatState()).chat
        chat = chats.append(chat.id, NodeRole.USER, "long words " * 50, revision=chat.revision).chat
        for branch in range(number % 4):
            leaf = chat.active_leaf_id
            assert leaf is not None
            chat = chats.branch_from(chat.id, leaf, f"side {branch}", revision=chat.revision).chat
        assert len(chats.list_branches(chat.id, revision=chat.revision)) == 1 + number % 4
        listed.append(chat.id)
        assert chats._branches.held <= 8_000
    assert 1 < len(chats._branches) < 40 and listed[-1] in chats._branches
    # a list kept is given again at its revision, without a query
    chat = store.get_chat(listed[-1])
    assert chats.list_branches(chat.id, revision=chat.revision) == store.branches(chat.id)


def test_the_librarys_kept_answers_stay_under_their_byte_budget() -> None:
    kept: Kept[str, dict[str, object]] = Kept(LibraryWatch(), budget=20_000)
    answer = {"enabled": True, "model": "small-embedder", "chunk": 400}
    for account in range(1_000):
        got = kept.get(f"account-{account}", lambda: dict(answer))
        assert got == answer
        assert kept.held <= 20_000
    assert 10 < len(kept) < 1_000
    one = approx_bytes(answer)
    assert kept.held >= len(kept) * one  # each answer counts at least its own bytes
    # the most recently asked stay; an answer asked again is not read again
    asked = []
    kept.get("account-999", lambda: asked.append(1) or {})
    assert asked == []


def test_a_kept_answer_read_again_after_a_write_keeps_the_bound() -> None:
    watch = LibraryWatch()
    kept: Kept[str, str] = Kept(watch, budget=5_000)
    for round_ in range(5):
        watch.heard()  # a write elsewhere: every answer is read again
        for account in range(100):
            assert kept.get(f"a{account}", lambda r=round_: "x" * (50 * r)) == "x" * (50 * round_)
            assert kept.held <= 5_000


def test_finished_runs_measured_once_they_end(store: SqlStore) -> None:
    """A run is measured when it has ended (its events are then all there)."""
    registry = GenerationRegistry(finished_bytes=10_000_000)

    async def go() -> None:
        first = RunningGeneration("g1", "chat", GenerationType.NORMAL)
        registry.add(first)
        first.publish(Completed(Ending.SAVED, "w " * 1_000))
        registry.add(RunningGeneration("g2", "chat", GenerationType.NORMAL))
        assert registry.finished_held > 2_000

    asyncio.run(go())
