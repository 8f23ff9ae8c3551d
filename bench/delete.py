"""Chat deletion benchmark: a long chat deleted while another chat is being written.

The database holds a 50,000-message chat of other texts (bulk-imported), so a delete
that read other chats' messages would show, and the chat to delete: ~400-character
messages written through the chat service ten a revision (each with its change log
row), one in ten edited, some sharing their text with the big chat. A writer thread
appends to a third chat, one message a revision, as fast as it can, from before the
delete until nothing of the deleted chat is left.

Figures per database and size: the delete as the person waits for it
(`ChatService.delete_chat`: the chat is gone from the listing when it returns), the time
until every row of the chat is removed (the rest of the work runs in the background),
and the other chat's write latency meanwhile (median, 95th percentile, worst, count).
Targets for a 2,000-message chat with the writes going on: the delete returns in under
a second with the chat gone from the list, and every row is removed in under a second.

    python bench/delete.py [--sizes 2000,10000] [--database URL] [--others 50000]

SQLite always (a file, full durability); PostgreSQL as well with `--database` (default
`$TAVERNA_TEST_DATABASE_URL`), in a schema of its own dropped afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from taverna.model.chat import Node, NodeRole, new_id
from taverna.services.chats.service import ChatService
from taverna.store import NewChat
from taverna.store.sql import SqlStore, open_store

TARGET_SECONDS = 1.0
TARGET_SIZE = 2000
WORDS = [
    "the",
    "lantern",
    "road",
    "forest",
    "quiet",
    "she",
    "whispered",
    "toward",
    "river",
    "stone",
    "light",
    "shadow",
    "warm",
]


def text(rng: random.Random, label: str) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(70))
    return f"{label} {words}"[:400]


def build(store: SqlStore, size: int, others: int, rng: random.Random) -> tuple[str, str]:
    """The big chat of other texts, the chat to delete, and the chat written meanwhile."""
    shared = [text(rng, f"shared {i}") for i in range(50)]
    nodes: list[Node] = []
    for i in range(others):
        content = shared[i % 50] if i % 100 == 0 else text(rng, f"other {i}")
        nodes.append(
            Node(
                id=new_id(),
                chat_id="",
                parent_id=nodes[-1].id if nodes else None,
                role=NodeRole.USER if i % 2 == 0 else NodeRole.ASSISTANT,
                content=content,
            )
        )
    store.import_tree(NewChat(title="others"), nodes, active_leaf_id=nodes[-1].id)
    doomed = store.create_chat(NewChat(title="doomed"))
    revision = doomed.revision
    for start in range(0, size, 10):
        with store.write(doomed.id, revision=revision, label="append") as w:
            for i in range(start, min(start + 10, size)):
                content = shared[i % 50] if i % 40 == 0 else text(rng, f"doomed {i}")
                parent = w.chat.active_leaf_id
                node = w.insert_node(parent, NodeRole.USER, content)
                w.set_selection(parent, node.id)
                w.set_active(node.id)
            w.update_node(node.id, content=text(rng, f"doomed {i} edited"))
        revision += 1
    written = store.create_chat(NewChat(title="written"))
    return doomed.id, written.id


def rows_of(store: SqlStore, chat_id: str) -> int:
    tables = ("nodes", "selections", "changes", "revisions", "branches", "history_texts")
    with store.engine.connect() as conn:
        return sum(
            int(
                conn.execute(
                    sa.text(f"SELECT COUNT(*) FROM {table} WHERE chat_id = :c"), {"c": chat_id}
                ).scalar()
                or 0
            )
            for table in tables
        )


def measure(store: SqlStore, doomed: str, written: str) -> dict[str, Any]:
    chats = ChatService(store)
    latencies: list[float] = []
    running = threading.Event()
    stop = threading.Event()

    def writer() -> None:
        revision = chats.get_chat(written).revision
        while not stop.is_set():
            started = time.perf_counter()
            outcome = chats.append(written, NodeRole.USER, "Still here.", revision=revision)
            revision = outcome.chat.revision
            latencies.append(time.perf_counter() - started)
            running.set()

    thread = threading.Thread(target=writer)
    thread.start()
    running.wait()
    time.sleep(0.2)  # the writes' own pace first
    before = list(latencies)
    latencies.clear()
    rows = rows_of(store, doomed)
    started = time.perf_counter()
    chats.delete_chat(doomed, revision=chats.get_chat(doomed).revision)
    visible = time.perf_counter() - started
    listed = doomed in {c.chat.id for c in store.list_chats()}
    while store.deleted_chats():
        time.sleep(0.002)
    whole = time.perf_counter() - started
    stop.set()
    thread.join()
    during = latencies or [0.0]
    return {
        "rows": rows,
        "visible_ms": visible * 1000,
        "whole_ms": whole * 1000,
        "still_listed": listed,
        "writes": len(latencies),
        "write_p50_ms": statistics.median(during) * 1000,
        "write_p95_ms": sorted(during)[int(len(during) * 0.95)] * 1000,
        "write_max_ms": max(during) * 1000,
        "write_p50_before_ms": statistics.median(before) * 1000,
    }


def run(backend: str, size: int, others: int, database: str | None) -> dict[str, Any]:
    rng = random.Random(size)
    with tempfile.TemporaryDirectory() as folder:
        schema = f"bench_delete_{os.getpid()}_{size}"
        store = (
            open_store(Path(folder) / "data")
            if backend == "sqlite"
            else open_store(str(database), schema=schema)
        )
        try:
            doomed, written = build(store, size, others, rng)
            figures = measure(store, doomed, written)
        finally:
            store.close()
            if backend != "sqlite":
                engine = sa.create_engine(str(database))
                with engine.begin() as conn:
                    conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
                engine.dispose()
    return {"database": backend, "messages": size, **figures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000,10000")
    parser.add_argument("--others", type=int, default=50_000)
    parser.add_argument("--database", default=os.environ.get("TAVERNA_TEST_DATABASE_URL"))
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    backends = ["sqlite"] + (["postgresql"] if args.database else [])
    results = [run(b, size, args.others, args.database) for b in backends for size in sizes]
    print(
        f"{'database':<11}{'messages':>9}{'rows':>8}{'delete':>10}{'all gone':>10}"
        f"{'writes':>8}{'write p50':>11}{'p95':>9}{'max':>9}{'p50 before':>12}"
    )
    for r in results:
        print(
            f"{r['database']:<11}{r['messages']:>9,}{r['rows']:>8,}{r['visible_ms']:>8.1f}ms"
            f"{r['whole_ms']:>8.1f}ms{r['writes']:>8}{r['write_p50_ms']:>9.1f}ms"
            f"{r['write_p95_ms']:>7.1f}ms{r['write_max_ms']:>7.1f}ms"
            f"{r['write_p50_before_ms']:>10.1f}ms"
        )
    checked = [r for r in results if r["messages"] == TARGET_SIZE]
    limit = TARGET_SECONDS * 1000
    returned = all(r["visible_ms"] < limit and not r["still_listed"] for r in checked)
    removed = all(r["whole_ms"] < limit for r in checked)

    def verdict(met: bool) -> str:
        return ("PASS" if met else "MISS") if checked else "not measured"

    print(
        f"target: a {TARGET_SIZE:,}-message chat's delete returns in under "
        f"{TARGET_SECONDS:.0f} s, the chat gone from the list: {verdict(returned)}"
    )
    print(
        f"target: every row of it removed in under {TARGET_SECONDS:.0f} s while another "
        f"chat is written: {verdict(removed)}"
    )
    load = os.getloadavg()[0]
    print(f"(load average {load:.1f} on {os.cpu_count()} processors)")
    if not args.database:
        print("(PostgreSQL not measured: pass --database or set TAVERNA_TEST_DATABASE_URL)")
    summary = {"delete_returns": returned, "removed_whole": removed}
    print(json.dumps({"bench": "delete", "targets_met": summary, "load": load, "results": results}))


if __name__ == "__main__":
    main()
