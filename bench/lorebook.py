"""Lorebook activation speed: median time per turn for books of 100, 1,000 and 10,000 entries.

Each entry has 2-4 keys drawn from 20,000 lore names, 10% of entries have secondary
keys, a few have a regex key (3, 3 and 10), one in 500 is constant; half of the contents name
another entry's key so recursion has work to do. Chat messages are 30-80 everyday
words with three to six of the book's keys mixed in. Each turn scans a growing chat (scan depth 4,
recursion on, whole words, budget 25% of 8,192 tokens) and the book object stays the
same between turns, so its compiled automata are reused as they are in the product.
The first turn (which compiles the book) is reported apart.

Prints a table, then one line of JSON with the figures.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from taverna.engine.lorebook import BookInPlay, BookSource, ScanMessage, activate
from taverna.model.lorebook import Entry, Lorebook, SelectiveLogic, WorldInfoSettings

SIZES = (100, 1_000, 10_000)
TURNS = 60
TARGET_MS = 5.0


def vocabulary(rng: random.Random, size: int, capital: bool = False) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        word = "".join(rng.choice(letters) for _ in range(rng.randint(4, 9)))
        words.add(word.capitalize() if capital else word)
    return sorted(words)


def make_book(size: int, names: list[str], common: list[str], rng: random.Random) -> Lorebook:
    """Entries keyed by lore names (people, places); contents sometimes name another."""
    entries = []
    for uid in range(size):
        keys = tuple(rng.choice(names) for _ in range(rng.randint(2, 4)))
        if uid % (size // max(3, size // 1000)) == 7:
            keys = (f"/{keys[0]}(s|es)?\\b/i", *keys[1:])
        secondary: tuple[str, ...] = ()
        if uid % 10 == 3:
            secondary = (rng.choice(common), rng.choice(names))
        text = " ".join(rng.choice(common) for _ in range(12))
        if rng.random() < 0.5:
            text += f" {rng.choice(names)}"
        entries.append(
            Entry(
                uid=uid,
                key=keys,
                keysecondary=secondary,
                selective_logic=SelectiveLogic(uid % 4),
                constant=uid % 500 == 11,
                order=rng.randint(1, 200),
                content=f"Lore {uid}: {text}.",
            )
        )
    return Lorebook(name=f"Bench{size}", entries=tuple(entries))


def make_chat(
    book: Lorebook, common: list[str], rng: random.Random, turns: int
) -> list[ScanMessage]:
    """Messages of everyday words that mention three to six of the book's keys each."""
    keys = [k for entry in book.entries for k in entry.key if not k.startswith("/")]
    chat = []
    for turn in range(turns + 8):
        words = [rng.choice(common) for _ in range(rng.randint(30, 80))]
        for _ in range(rng.randint(3, 6)):
            words.insert(rng.randrange(len(words)), rng.choice(keys))
        text = " ".join(words)
        chat.append(ScanMessage(text=text.capitalize() + ".", name="User" if turn % 2 else "Char"))
    return chat


def count_tokens(text: str) -> int:
    return len(text) // 4 + 1


def main() -> None:
    rng = random.Random(1234)
    names = vocabulary(rng, 20_000, capital=True)
    common = vocabulary(rng, 3_000)
    settings = WorldInfoSettings(depth=4, recursive=True, match_whole_words=True)
    rows = []
    for size in SIZES:
        book = make_book(size, names, common, rng)
        chat = make_chat(book, common, rng, TURNS)
        books = [BookInPlay(book, BookSource.GLOBAL)]
        start = time.perf_counter()
        first = activate(
            books, chat[:8], max_context=8192, count_tokens=count_tokens, settings=settings
        )
        first_ms = (time.perf_counter() - start) * 1000
        times = []
        cpu_times = []
        activated = []
        for turn in range(TURNS):
            path = chat[: 9 + turn]
            cpu_start = time.process_time()
            start = time.perf_counter()
            result = activate(
                books,
                path,
                max_context=8192,
                count_tokens=count_tokens,
                settings=settings,
                timers=first.timers,
                seed=turn,
            )
            times.append((time.perf_counter() - start) * 1000)
            cpu_times.append((time.process_time() - cpu_start) * 1000)
            activated.append(len(result.entries))
        rows.append(
            {
                "entries": size,
                "median_ms": round(statistics.median(times), 3),
                "median_cpu_ms": round(statistics.median(cpu_times), 3),
                "p90_ms": round(sorted(times)[int(len(times) * 0.9)], 3),
                "first_turn_ms": round(first_ms, 1),
                "mean_activated": round(statistics.mean(activated), 1),
            }
        )
    print(
        f"{'entries':>8} {'median ms':>10} {'median CPU ms':>14} {'p90 ms':>8} "
        f"{'first turn ms':>14} {'activated':>10}"
    )
    for row in rows:
        print(
            f"{row['entries']:>8} {row['median_ms']:>10.3f} {row['median_cpu_ms']:>14.3f} "
            f"{row['p90_ms']:>8.3f} {row['first_turn_ms']:>14.1f} {row['mean_activated']:>10.1f}"
        )
    small, large = rows[0], rows[-1]
    growth = large["median_cpu_ms"] / max(small["median_cpu_ms"], 1e-9)
    entries_growth = large["entries"] / small["entries"]
    sublinear = growth < entries_growth
    meets_wall = large["median_ms"] < TARGET_MS
    meets_cpu = large["median_cpu_ms"] < TARGET_MS
    print(
        f"10,000 entries: {large['median_ms']:.3f} ms wall, {large['median_cpu_ms']:.3f} ms CPU "
        f"per turn (target < {TARGET_MS} ms: wall {'met' if meets_wall else 'NOT met'}, CPU "
        f"{'met' if meets_cpu else 'NOT met'}; wall time includes waiting for a core when the "
        f"machine is busy); CPU time grew x{growth:.1f} for x{entries_growth:.0f} entries "
        f"({'sub-linear' if sublinear else 'NOT sub-linear'})"
    )
    print(
        json.dumps(
            {
                "benchmark": "lorebook",
                "scan_depth": 4,
                "recursion": True,
                "rows": rows,
                "median_ms_10000": large["median_ms"],
                "median_cpu_ms_10000": large["median_cpu_ms"],
                "target_ms": TARGET_MS,
                "target_met_wall": meets_wall,
                "target_met_cpu": meets_cpu,
                "growth_factor": round(growth, 2),
                "sublinear": sublinear,
            }
        )
    )


if __name__ == "__main__":
    main()
