"""Store benchmark: append cost at 1,000 / 10,000 / 100,000 messages, open, read, export, import.

Each chat is built through the bulk import path: messages of ~400 characters, the
character's replies each with 2 swipes (candidates at the same place). Appends then go through the chat service exactly
as a person's turn would (one transaction and one revision each) on SQLite with
full durability. Prints a table, then one line of JSON with the figures.

    python bench/store.py [--sizes 1000,10000,100000] [--appends 101] [--database URL]

With `--database postgresql+psycopg://...` the same runs on PostgreSQL, each chat in
a schema of its own that is dropped afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import sqlalchemy as sa

from taverna.model.chat import ActivePath, Node, NodeRole, new_id
from taverna.services.chats.service import ChatService
from taverna.store import NewChat
from taverna.store.sql import SqlStore, open_store

WORDS = [
    "the",
    "a",
    "lantern",
    "road",
    "forest",
    "quiet",
    "she",
    "he",
    "they",
    "whispered",
    "looked",
    "toward",
    "river",
    "stone",
    "light",
    "shadow",
    "warm",
    "cold",
    "smiled",
    "slowly",
    "across",
    "under",
    "above",
    "Seraphina",
    "traveler",
    "glade",
]


def paragraph(rng: random.Random, length: int = 400) -> str:
    out: list[str] = []
    size = 0
    while size < length:
        word = rng.choice(WORDS)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[:length]


class Texts:
    """Distinct ~400-character messages, cheap to make by the hundred thousand."""

    def __init__(self, rng: random.Random) -> None:
        self.pool = [paragraph(rng) for _ in range(997)]
        self.count = 0

    def next(self) -> str:
        self.count += 1
        body = self.pool[self.count % len(self.pool)]
        return f"{self.count} {body}"[:400]


def build_chat(store: SqlStore, messages: int, texts: Texts) -> tuple[str, float]:
    """A chat of `messages` path messages via the bulk path; replies carry 2 swipes."""
    started = time.perf_counter()
    nodes: list[Node] = []
    parent: str | None = None
    for i in range(messages):
        role = NodeRole.ASSISTANT if i % 2 == 0 else NodeRole.USER
        speaker = "Seraphina" if role is NodeRole.ASSISTANT else "Traveler"
        for _ in range(2 if role is NodeRole.ASSISTANT else 1):
            node = Node(new_id(), "", parent, role, texts.next(), speaker=speaker)
            nodes.append(node)
        parent = nodes[-1].id
    chat = store.import_tree(NewChat(title=f"bench {messages}"), nodes, active_leaf_id=parent)
    return chat.id, time.perf_counter() - started


def append_times(
    chats: dict[int, tuple[ChatService, str]], count: int, texts: Texts
) -> dict[int, list[float]]:
    """Seconds per append for each chat size, taken in turns so load drift hits all alike."""
    revisions = {size: service.get_chat(cid).revision for size, (service, cid) in chats.items()}
    times: dict[int, list[float]] = {size: [] for size in chats}
    for turn in range(count + 3):  # the first 3 rounds warm caches up and are not counted
        role = NodeRole.USER if turn % 2 == 0 else NodeRole.ASSISTANT
        for size, (service, cid) in chats.items():
            text = texts.next()
            started = time.perf_counter()
            out = service.append(cid, role, text, revision=revisions[size])
            elapsed = time.perf_counter() - started
            revisions[size] = out.chat.revision
            if turn >= 3:
                times[size].append(elapsed)
    return times


def swipe_times(
    chats: dict[int, tuple[ChatService, str]], count: int, texts: Texts
) -> dict[int, float]:
    """Median seconds to move between the last reply's two swipes, per chat size."""
    medians = {}
    for size, (service, cid) in chats.items():
        chat = service.get_chat(cid)
        assert chat.active_leaf_id is not None
        out = service.swipe(cid, chat.active_leaf_id, texts.next(), revision=chat.revision)
        assert out.node is not None
        current, revision = out.node.id, out.chat.revision
        times = []
        for _ in range(count):
            started = time.perf_counter()
            out = service.step_candidate(cid, current, 1, revision=revision)
            times.append(time.perf_counter() - started)
            revision = out.chat.revision
            assert out.node is not None
            current = out.node.id
        medians[size] = statistics.median(times)
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--appends", type=int, default=101)
    parser.add_argument("--database", help="a PostgreSQL URL (default: SQLite files)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    texts = Texts(random.Random(42))
    backend = "postgresql" if args.database else "sqlite"
    figures: dict[str, object] = {"backend": backend, "appends_per_size": args.appends}
    schemas: list[str] = []

    def opening(size: int) -> SqlStore:
        if not args.database:
            return open_store(Path(tmp) / f"chat{size}")
        schema = f"bench_{os.getpid()}_{size}"
        if schema not in schemas:
            schemas.append(schema)
        return open_store(args.database, schema=schema)

    rows: list[tuple[str, str]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="taverna-bench-") as tmp:
            stores: dict[int, SqlStore] = {}
            chats: dict[int, tuple[ChatService, str]] = {}
            for size in sizes:
                stores[size] = opening(size)
                chat_id, build_s = build_chat(stores[size], size, texts)
                chats[size] = (ChatService(stores[size]), chat_id)
                figures[f"build_{size}_s"] = round(build_s, 3)
                rows.append(
                    (f"build {size:,} messages (replies with 2 swipes, bulk)", f"{build_s:.2f} s")
                )
            times = append_times(chats, args.appends, texts)
            medians = {}
            for size in sizes:
                ordered = sorted(times[size])
                medians[size] = statistics.median(ordered)
                p90 = ordered[int(len(ordered) * 0.9)]
                figures[f"append_median_{size}_ms"] = round(medians[size] * 1000, 3)
                figures[f"append_p90_{size}_ms"] = round(p90 * 1000, 3)
                rows.append(
                    (
                        f"append at {size:,}: median / p90",
                        f"{medians[size] * 1000:.2f} / {p90 * 1000:.2f} ms",
                    )
                )
            if len(sizes) > 1:
                low, high = min(sizes), max(sizes)
                ratio = medians[high] / medians[low]
                figures["append_ratio"] = round(ratio, 3)
                rows.append((f"append ratio {high:,} : {low:,} (must be < 2)", f"{ratio:.2f}"))
            for size, seconds in swipe_times(chats, 21, texts).items():
                figures[f"swipe_switch_median_{size}_ms"] = round(seconds * 1000, 3)
                rows.append((f"switch swipe ‹ › at {size:,}: median", f"{seconds * 1000:.2f} ms"))
            size = max(sizes)
            for opened in stores.values():
                opened.close()
            chat_id = chats[size][1]
            started = time.perf_counter()
            store = opening(size)
            path = ChatService(store).active_path(chat_id)
            open_s = time.perf_counter() - started
            figures[f"open_and_read_{size}_s"] = round(open_s, 3)
            figures["path_length"] = len(path.entries)
            rows.append(
                (f"open + read active path ({len(path.entries):,} messages)", f"{open_s:.2f} s")
            )
            started = time.perf_counter()
            window = ChatService(store).active_path(chat_id, tail=50)
            tail_s = time.perf_counter() - started
            figures[f"read_last_50_of_{size}_ms"] = round(tail_s * 1000, 2)
            rows.append(
                (
                    f"read the last {len(window.entries)} messages of the path",
                    f"{tail_s * 1000:.1f} ms",
                )
            )
            rows.extend(interchange_figures(store, chat_id, Path(tmp), size, figures))
            rows.extend(branch_listing(store, chat_id, path, figures))
            store.close()
    finally:
        if schemas:
            engine = sa.create_engine(args.database)
            with engine.begin() as conn:
                for schema in schemas:
                    conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            engine.dispose()
    width = max(len(name) for name, _ in rows)
    print(f"{f'store benchmark ({backend})'.ljust(width)}  value")
    for name, value in rows:
        print(f"{name.ljust(width)}  {value}")
    print(json.dumps(figures))
    ratio = figures.get("append_ratio")
    if isinstance(ratio, float) and ratio >= 2:
        sys.exit(1)


def branch_listing(
    store: SqlStore, chat_id: str, path: ActivePath, figures: dict[str, object], count: int = 20
) -> list[tuple[str, str]]:
    """List 20 branches spread along the path: without tombstones, then with one near the end."""
    chats = ChatService(store)
    revision = store.get_chat(chat_id).revision
    entries = path.entries
    for i in range(count):
        node = entries[(len(entries) - 1) * (i + 1) // count].node
        revision = chats.branch_from(
            chat_id, node.id, f"branch {i}", revision=revision, switch=False
        ).chat.revision

    def timed() -> float:
        runs = []
        for _ in range(5):
            started = time.perf_counter()
            listed = chats.list_branches(chat_id)
            runs.append(time.perf_counter() - started)
        assert len(listed) == count + 1
        return statistics.median(runs)

    plain = timed()
    # A tombstone 100 messages before the end: only the heads below it walk, that far.
    gone = entries[len(entries) - 100].node.id
    revision = chats.delete(chat_id, gone, revision=revision).chat.revision
    with_tombstone = timed()
    chats.restore(chat_id, gone, revision=revision)
    figures[f"list_{count}_branches_ms"] = round(plain * 1000, 2)
    figures[f"list_{count}_branches_tombstone_ms"] = round(with_tombstone * 1000, 2)
    return [
        (f"list {count} branches (length, last message)", f"{plain * 1000:.1f} ms"),
        (
            f"list {count} branches, a tombstone 100 before the end",
            f"{with_tombstone * 1000:.1f} ms",
        ),
    ]


def interchange_figures(
    store: SqlStore, chat_id: str, tmp: Path, size: int, figures: dict[str, object]
) -> list[tuple[str, str]]:
    """Export the largest chat to SillyTavern JSONL and import it back, when available."""
    try:
        from taverna.services.interchange import InterchangeService
    except ImportError:
        return [("JSONL export / import", "not available")]
    service = InterchangeService(store)
    started = time.perf_counter()
    [written, *_] = service.export_to(chat_id, tmp / "export")
    export_s = time.perf_counter() - started
    started = time.perf_counter()
    [imported] = service.import_files([written], find_linked=False)
    import_s = time.perf_counter() - started
    figures[f"export_jsonl_{size}_s"] = round(export_s, 3)
    figures[f"import_jsonl_{size}_s"] = round(import_s, 3)
    figures["jsonl_mb"] = round(written.stat().st_size / 1e6, 1)
    imported_length = len(store.active_path(imported.chat.id).entries)
    figures["imported_path_length"] = imported_length
    return [
        (f"export active path to JSONL ({figures['jsonl_mb']} MB)", f"{export_s:.2f} s"),
        (f"import that JSONL ({imported_length:,} messages)", f"{import_s:.2f} s"),
    ]


if __name__ == "__main__":
    main()
