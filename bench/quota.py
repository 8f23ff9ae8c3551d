"""Storage quota benchmark: what counting an account's stored bytes costs as it grows.

With a storage quota set, a write that may add text is checked against all the account
holds (library, pictures, chats, messages with their versions, sent prompts). Counting
that reads every message, so it runs at most once a minute per account (and after a
delete); between counts the check adds up the writes it admitted. This times the count
(what the first write of a minute waits for, off the event loop) and the check between
counts, for accounts of 1,000 / 10,000 / 100,000 messages of ~400 characters (built
through the bulk import path, in one chat each), another account's chat beside them.
Prints a table, then one line of JSON with the figures and the machine's load.

    python bench/quota.py [--sizes 1000,10000,100000] [--repeat 7] [--database URL]
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.store import Texts
from taverna.model.chat import Node, NodeRole, new_id
from taverna.services.accounts.service import AccountService
from taverna.store import NewChat
from taverna.store.sql import open_store


def build(store: object, owner: str, messages: int, texts: Texts) -> None:
    nodes: list[Node] = []
    parent: str | None = None
    for i in range(messages):
        role = NodeRole.ASSISTANT if i % 2 == 0 else NodeRole.USER
        node = Node(new_id(), "", parent, role, texts.next(), speaker=role.value)
        nodes.append(node)
        parent = node.id
    store.import_tree(  # type: ignore[attr-defined]
        NewChat(title="a chat", owner=owner), nodes, active_leaf_id=parent
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--database", default=None, help="a database URL (default: SQLite)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    texts = Texts(random.Random(7))
    figures: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        url = args.database or f"sqlite:///{Path(folder) / 'quota.db'}"
        store = open_store(url)
        try:
            build(store, "neighbour", 20_000, texts)
            for size in sizes:
                account = store.add_account(f"account-{size}", "not a real hash")
                owner = account.id
                build(store, owner, size, texts)
                store.stored_bytes(owner)  # the first read warms the page cache
                times = []
                for _ in range(args.repeat):
                    started = time.perf_counter()
                    total = store.stored_bytes(owner)
                    times.append(time.perf_counter() - started)
                store.update_account(owner, quota_bytes=total * 2)
                accounts = AccountService(store)
                accounts.check_storage(owner, 100)  # the count, then kept
                checks = []
                for _ in range(args.repeat):
                    started = time.perf_counter()
                    accounts.check_storage(owner, 100)
                    checks.append(time.perf_counter() - started)
                figures[str(size)] = {
                    "count_median_ms": round(statistics.median(times) * 1000, 2),
                    "count_max_ms": round(max(times) * 1000, 2),
                    "check_between_counts_ms": round(statistics.median(checks) * 1000, 3),
                    "bytes": total,
                }
                print(
                    f"{size:>7} messages: count median "
                    f"{figures[str(size)]['count_median_ms']:8.2f} ms, max "
                    f"{figures[str(size)]['count_max_ms']:8.2f} ms; check between counts "
                    f"{figures[str(size)]['check_between_counts_ms']:6.3f} ms ({total} bytes)"
                )
        finally:
            store.close()
    load = os.getloadavg()
    print(
        json.dumps(
            {"bench": "quota", "database": "given" if args.database else "sqlite"}
            | {"sizes": figures, "load": [round(x, 2) for x in load], "cpus": os.cpu_count()}
        )
    )


if __name__ == "__main__":
    main()
