"""Write benchmark: what storing a person's message and a model's reply costs, in process.

A chat gets `--turns` turns, each the two writes a server makes for it: the person's
message (`ChatService.append`, as a generation posts it before asking the model) and the
reply (`get_chat`, then `add_reply` with its generation record and the turn's state, as
the reply writer stores it). Each write's statements are counted (SQLAlchemy's
`before_cursor_execute`, BEGIN and COMMIT included where the driver sends them) and its
CPU time taken on its own thread; the first `--warm` turns are not counted. SQLite runs
in a temporary folder with full durability, as a server runs it; PostgreSQL in a schema of
its own, dropped afterwards, when `--database` or `$TAVERNA_TEST_DATABASE_URL` names one.
Prints a table, then one line of JSON with the figures.

    python bench/writes.py [--turns 300] [--warm 30] [--database URL]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from taverna.model.chat import CharacterRef, GenerationInfo, NodeRole
from taverna.services.chats.service import ChatService
from taverna.store.sql import SqlStore
from taverna.store.testing import counting_statements, temporary_store

# What a turn's prompt leaves in its state when nothing set a variable or a timer.
TURN_STATE: dict[str, Any] = {"variables": {}, "timedWorldInfo": {}}


@contextmanager
def opened(backend: str, database: str | None) -> Iterator[SqlStore]:
    """A throw-away store, SQLite with the server's own durability (fsync at commit)."""
    with (
        tempfile.TemporaryDirectory() as folder,
        temporary_store(backend, Path(folder), url=database, durability="full") as store,
    ):
        yield store


def measure(backend: str, database: str | None, turns: int, warm: int) -> dict[str, Any]:
    figures: dict[str, dict[str, list[float]]] = {
        kind: {"statements": [], "cpu": [], "wall": []} for kind in ("message", "reply")
    }
    with opened(backend, database) as store, counting_statements(store) as seen:
        chats = ChatService(store)
        chat = chats.create_chat(
            "bench",
            characters=(CharacterRef("Seraphina"),),
            user_name="User",
            greetings=["Seraphina looks up from the fire."],
            greeting_speaker="Seraphina",
        ).chat
        revision = chat.revision

        def timed(kind: str, write: Callable[[], int], counted: bool) -> int:
            seen.clear()
            cpu, wall = time.thread_time(), time.perf_counter()
            result = write()
            cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
            statements = len(seen)
            if counted:
                figures[kind]["statements"].append(statements)
                figures[kind]["cpu"].append(cpu * 1e6)
                figures[kind]["wall"].append(wall * 1e6)
            return result

        for turn in range(warm + turns):
            counted = turn >= warm
            text = f"Turn {turn}: the lantern swung as she crossed the river stone. " * 6

            def message(text: str = text, revision: int = revision) -> int:
                done = chats.append(chat.id, NodeRole.USER, text, revision=revision, speaker="User")
                return done.chat.revision

            revision = timed("message", message, counted)

            def reply(text: str = text) -> int:
                now = datetime.now(UTC)
                current = chats.get_chat(chat.id)
                done = chats.add_reply(
                    current.id,
                    current.active_leaf_id,
                    "Seraphina smiles. " + text,
                    revision=current.revision,
                    speaker="Seraphina",
                    generation=GenerationInfo(
                        provider="openai",
                        model="stub",
                        started=now,
                        finished=now,
                        prompt_tokens=900,
                        completion_tokens=200,
                        finish_reason="stop",
                        extras={"connection": "stub", "kind": "normal", "seconds": 10.2},
                    ),
                    turn_state=TURN_STATE,
                    label="normal",
                )
                return done.chat.revision

            revision = timed("reply", reply, counted)
    return {
        kind: {
            "statements": statistics.mean(values["statements"]),
            "cpu_us_p50": statistics.median(values["cpu"]),
            "cpu_us_mean": statistics.mean(values["cpu"]),
            "wall_us_p50": statistics.median(values["wall"]),
        }
        for kind, values in figures.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--warm", type=int, default=30)
    parser.add_argument("--database", default=os.environ.get("TAVERNA_TEST_DATABASE_URL"))
    args = parser.parse_args()
    backends = ["sqlite"] + (["postgresql"] if args.database else [])
    results = {b: measure(b, args.database, args.turns, args.warm) for b in backends}
    print(f"{'database':<11} {'write':<8} {'statements':>10} {'CPU p50 µs':>11}", end="")
    print(f" {'CPU mean µs':>12} {'wall p50 µs':>12}")
    for backend, kinds in results.items():
        for kind, f in kinds.items():
            print(
                f"{backend:<11} {kind:<8} {f['statements']:>10.1f} {f['cpu_us_p50']:>11.0f}"
                f" {f['cpu_us_mean']:>12.0f} {f['wall_us_p50']:>12.0f}"
            )
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    json.dump({"turns": args.turns, "results": results}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
