"""Chat backup cost: CPU per backup of one chat in a folder full of other chats' backups.

A chat of MESSAGES messages on its path (each reply with 2 more candidates, every tenth
message of the person edited and resent, the old turn kept with its reply) is backed up
ROUNDS times, its last message edited before each (as a turn changes it), into a folder that already holds 10,000 backups of 200 other chats, on
SQLite and (with `$TAVERNA_TEST_DATABASE_URL`) PostgreSQL in a schema of its own. The
figure is this process's CPU per backup (the database server's own is not counted), the
processor's load average beside it. With `--plain` no message is resent: the chat is one
line of messages with their candidates, whose backup extends the last one from the change
log instead of exporting the whole tree.

    python bench/backups.py [MESSAGES ...] [--rounds 40] [--plain] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import sqlalchemy as sa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from taverna.model.chat import CharacterRef, GenerationInfo, Node, NodeRole, new_id  # noqa: E402
from taverna.services.chats.backups import BackupService  # noqa: E402
from taverna.services.chats.service import ChatService  # noqa: E402
from taverna.store.repository import NewChat, Store  # noqa: E402
from taverna.store.sql import open_store  # noqa: E402

TEXT = "The lantern swings in the wind above the ferry house door. " * 7
OTHER_CHATS = 200
KEPT = 50


def make_chat(store: Store, count: int, *, plain: bool = False) -> str:
    """A chat as a server makes it: replies with candidates, a few resent messages (none
    when `plain`)."""
    chat_id = new_id()
    start = datetime(2024, 1, 1, tzinfo=UTC)
    nodes: list[Node] = []
    selections: dict[str, str] = {}
    parent: str | None = None

    def node(parent_id: str | None, role: NodeRole, text: str) -> Node:
        made = Node(
            id=new_id(),
            chat_id=chat_id,
            parent_id=parent_id,
            role=role,
            content=text,
            speaker="Traveler" if role is NodeRole.USER else "Aria",
            created=start + timedelta(seconds=len(nodes)),
            generation=(
                GenerationInfo(provider="openai", model="gpt-4o")
                if role is NodeRole.ASSISTANT
                else None
            ),
        )
        nodes.append(made)
        return made

    for i in range(count):
        role = NodeRole.ASSISTANT if i % 2 == 0 else NodeRole.USER
        if role is NodeRole.USER and i % 20 == 1 and not plain:  # resent: the old turn kept
            older = node(parent, role, f"{i}x. {TEXT[:300]}")
            node(older.id, NodeRole.ASSISTANT, f"{i}r. {TEXT[:300]}")
        if role is NodeRole.ASSISTANT:
            for swipe in "ab":
                node(parent, role, f"{i}{swipe}. {TEXT[:300]}")
        chosen = node(parent, role, f"{i}. {TEXT[:300]}")
        selections[parent or ""] = chosen.id
        parent = chosen.id
    store.import_tree(
        NewChat(title="Aria - bench", characters=(CharacterRef("Aria"),), id=chat_id),
        nodes,
        active_leaf_id=parent,
        selections=selections,
    )
    return chat_id


def fill_folder(folder: Path) -> None:
    """Other chats' backups, as many as a busy server keeps."""
    folder.mkdir(mode=0o700)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    for chat in range(OTHER_CHATS):
        key = f"{chat:08x}"
        for n in range(KEPT):
            stamp = (start + timedelta(minutes=n)).strftime("%Y%m%d-%H%M%S")
            (folder / f"chat_someone_else_{key}_{stamp}.jsonl").write_bytes(b"{}\n")


def measure(
    store: Store, folder: Path, messages: int, rounds: int, profile: bool, plain: bool
) -> float:
    chat_id = make_chat(store, messages, plain=plain)
    clock = [datetime(2025, 1, 1, tzinfo=UTC)]

    def now() -> datetime:
        clock[0] += timedelta(seconds=11)
        return clock[0]

    service = BackupService(store, folder, now=now)
    chats = ChatService(store)
    leaf = store.get_chat(chat_id).active_leaf_id
    assert leaf is not None
    for _ in range(3):  # warm: caches, prepared statements, a full set kept
        service.backup(chat_id)
    profiler = cProfile.Profile() if profile else None
    spent = 0.0
    for round in range(rounds):
        # As after a turn: the last message changed since the last backup (not counted).
        revision = store.get_chat(chat_id).revision
        chats.edit(chat_id, leaf, f"{round}. {TEXT[:300]}", revision=revision)
        cpu = time.process_time()
        if profiler is not None:
            profiler.enable()
        service.backup(chat_id)
        if profiler is not None:
            profiler.disable()
        spent += time.process_time() - cpu
    spent /= rounds
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("messages", type=int, nargs="*", default=[100, 1000])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--plain", action="store_true", help="no message resent")
    args = parser.parse_args()
    figures: dict[str, float] = {}
    url = os.environ.get("TAVERNA_TEST_DATABASE_URL")
    with tempfile.TemporaryDirectory(prefix="taverna-bench-") as tmp:
        for backend in ["sqlite", "postgresql"] if url else ["sqlite"]:
            for messages in args.messages:
                folder = Path(tmp) / f"{backend}-{messages}"
                folder.mkdir()
                backups = folder / "backups"
                fill_folder(backups)
                schema = f"bench_{uuid.uuid4().hex[:12]}"
                if backend == "sqlite":
                    store = open_store(folder / "data", durability="normal")
                else:
                    assert url is not None
                    store = open_store(url, schema=schema)
                try:
                    spent = measure(store, backups, messages, args.rounds, args.profile, args.plain)
                finally:
                    store.close()
                    if backend == "postgresql":
                        assert url is not None
                        engine = sa.create_engine(url)
                        with engine.begin() as conn:
                            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
                        engine.dispose()
                kind = "_plain" if args.plain else ""
                figures[f"{backend}_{messages}{kind}_ms"] = spent * 1000
    load = os.getloadavg()[0]
    print(f"{'backup CPU':<24}{'ms':>10}   (load {load:.2f})")
    for key, value in figures.items():
        print(f"{key:<24}{value:>10.2f}")
    print(json.dumps({**{k: round(v, 2) for k, v in figures.items()}, "load": round(load, 2)}))


if __name__ == "__main__":
    main()
