"""Builds that wait go fair between accounts: one account's flood cannot hold another's
turn, and within an account the one waiting longest goes first."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from taverna.services.turns.build_queue import BuildQueue


def _flood(
    arrivals: list[tuple[str, str]], *, pause_before: int | None = None
) -> tuple[list[str], dict[str, list[int]]]:
    """Run `arrivals` ((account, name), in order) through a one-thread queue whose first
    build is held until all have come; the order built and the places each was told."""
    built: list[str] = []
    told: dict[str, list[int]] = {}
    gate = threading.Event()

    async def go() -> None:
        queue = BuildQueue(ThreadPoolExecutor(max_workers=1))

        def work(name: str) -> str:
            gate.wait(5)
            built.append(name)
            return name

        async def one(account: str, name: str) -> str:
            return await queue.run(
                account,
                lambda: work(name),
                told=lambda place: told.setdefault(name, []).append(place),
            )

        tasks = []
        for account, name in arrivals:
            tasks.append(asyncio.create_task(one(account, name)))
            await asyncio.sleep(0)  # each comes in its turn
        assert queue.waiting == len(arrivals) - 1 and queue.busy == 1
        gate.set()
        assert [await t for t in tasks] == [name for _, name in arrivals]
        assert queue.waiting == 0 and queue.busy == 0

    asyncio.run(go())
    return built, told


def test_one_accounts_flood_lets_anothers_single_build_go_next() -> None:
    arrivals = [("alice", f"a{n}") for n in range(20)] + [("bob", "b0")]
    built, told = _flood(arrivals)
    # a0 was building when b0 came: b0 goes right after it, before alice's 19 others
    assert built[:2] == ["a0", "b0"]
    assert built[2:] == [f"a{n}" for n in range(1, 20)]  # alice's in the order they came
    assert "a0" not in told  # it never waited
    assert told["b0"] == [1]  # one build (a0's) before it, from the moment it came
    # a19 came 19th in line, went back one as b0 came before it, then up one a build
    assert told["a19"] == [19, 20, *range(19, 0, -1)]


def test_two_floods_take_turns_and_a_lone_account_keeps_its_order() -> None:
    arrivals = [("alice", f"a{n}") for n in range(5)] + [("bob", f"b{n}") for n in range(5)]
    built, _ = _flood(arrivals)
    assert built == ["a0", "b0", "a1", "b1", "a2", "b2", "a3", "b3", "a4", "b4"]
    alone, _ = _flood([("carol", f"c{n}") for n in range(6)])
    assert alone == [f"c{n}" for n in range(6)]


def test_a_build_that_need_not_wait_is_not_told_and_a_cancelled_one_leaves_the_line() -> None:
    async def go() -> list[str]:
        queue = BuildQueue(ThreadPoolExecutor(max_workers=1))
        told: list[int] = []
        assert await queue.run("alice", lambda: "now", told=told.append) == "now"
        assert told == []
        gate = threading.Event()
        first = asyncio.create_task(queue.run("alice", lambda: gate.wait(5) and "first"))
        await asyncio.sleep(0)
        dropped = asyncio.create_task(queue.run("bob", lambda: "dropped"))
        kept = asyncio.create_task(queue.run("carol", lambda: "kept"))
        await asyncio.sleep(0)
        assert queue.waiting == 2
        dropped.cancel()
        await asyncio.sleep(0)
        assert queue.waiting == 1
        gate.set()
        return [await first, await kept]

    assert asyncio.run(go()) == ["first", "kept"]
