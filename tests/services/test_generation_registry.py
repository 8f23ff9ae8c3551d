"""The registry of generations stays bounded however many finish, and never drops one
still running."""

from __future__ import annotations

import asyncio

from taverna.engine.assembly.context import GenerationType
from taverna.providers.events import TextDelta
from taverna.services.turns.runs import (
    Completed,
    Ending,
    GenerationRegistry,
    RunningGeneration,
    run_bytes,
)


def finished(number: int) -> RunningGeneration:
    run = RunningGeneration(f"g{number}", f"chat{number % 7}", GenerationType.NORMAL)
    run.publish(Completed(Ending.SAVED, "reply " * 50, node_id=f"n{number}", revision=1))
    return run


def test_finished_runs_are_bounded_by_their_bytes_and_the_newest_stay() -> None:
    async def go() -> None:
        budget = 32 * run_bytes(finished(0))
        registry = GenerationRegistry(keep_finished=600.0, finished_bytes=budget)
        running = RunningGeneration("live", "chat0", GenerationType.NORMAL)
        registry.add(running)
        for number in range(2000):
            registry.add(finished(number))
            assert registry.finished_held <= budget
            assert registry.kept <= 32 + 2  # the bound, the live run, the one just added
        assert registry.get("live") is running  # a running one is never dropped
        assert registry.get("g1999").result is not None  # the newest can be re-attached to
        assert [r.id for r in registry.for_chat("chat0", running_only=True)] == ["live"]
        # a run that held more counts for more: fewer of the big ones are kept
        for number in range(2000, 2100):
            big = finished(number)
            big.requests.append(("/v1/chat", {"messages": [{"content": "x" * 20_000}]}))
            registry.add(big)
            assert registry.finished_held <= budget
        assert registry.kept < 32

    asyncio.run(go())


def test_old_finished_runs_expire() -> None:
    async def go() -> None:
        registry = GenerationRegistry(keep_finished=0.0)
        registry.add(finished(1))
        await asyncio.sleep(0.01)
        registry.add(finished(2))
        assert [r.id for r in registry.for_chat("chat1")] == []

    asyncio.run(go())


def test_last_prompts_are_kept_for_the_newest_chats_only() -> None:
    from taverna.model.prompt import Prompt, PromptMessage, Role
    from taverna.services.turns.runs import RecentPrompts, prompt_bytes

    prompts = {f"chat{n}": Prompt(kind="chat") for n in range(10)}
    kept = RecentPrompts(budget=3 * prompt_bytes("chat0", prompts["chat0"]))
    for chat_id, prompt in prompts.items():
        kept[chat_id] = prompt
        assert len(kept) <= 3 and kept.held <= kept.budget
    kept["chat7"] = prompts["chat7"]  # generating again makes a chat the newest
    kept["chat0"] = prompts["chat0"]
    assert kept.keys() == ["chat9", "chat7", "chat0"]
    assert kept.get("chat7") is prompts["chat7"]
    assert kept.get("chat1") is None
    # a long prompt takes the room of many short ones
    long = Prompt(kind="chat", messages=(PromptMessage(Role.USER, "w" * 5000),))
    kept["chat1"] = long
    assert kept.keys() == ["chat1"] and kept.get("chat1") is long


def test_a_follower_gets_what_is_there_at_once_together_each_with_its_index() -> None:
    """Events published before a follower looks come in one batch; later ones as they
    come; from any index on, each event once with its own index."""

    async def go() -> tuple[list[list[tuple[int, object]]], list[list[tuple[int, object]]]]:
        run = RunningGeneration("g", "chat", GenerationType.NORMAL)
        for piece in ("a", "b", "c"):
            run.publish(TextDelta(piece))

        async def gather(since: int) -> list[list[tuple[int, object]]]:
            return [list(batch) async for batch in run.batches(since)]

        whole, resumed = asyncio.create_task(gather(0)), asyncio.create_task(gather(2))
        await asyncio.sleep(0)
        run.publish(TextDelta("d"))
        await asyncio.sleep(0)
        run.publish(Completed(Ending.SAVED, "abcd"))
        return await whole, await resumed

    whole, resumed = asyncio.run(go())
    done = Completed(Ending.SAVED, "abcd")
    assert whole == [
        [(0, TextDelta("a")), (1, TextDelta("b")), (2, TextDelta("c"))],
        [(3, TextDelta("d"))],
        [(4, done)],
    ]
    assert resumed == [[(2, TextDelta("c"))], [(3, TextDelta("d"))], [(4, done)]]
