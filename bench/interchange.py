"""SillyTavern chat interchange speed: import and export of a large chat JSONL.

Prints a table, then one line of JSON with the figures (seconds).
Usage: python bench/interchange.py [MESSAGES] [FORKED]   (default 100,000 and 10,000;
~400 characters each, assistant messages with 2 swipes). The second figure is the export of
a chat whose every user message was edited and resent (the old turn kept with its reply) and
every reply has 2 candidates: its time and its peak traced memory.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

from taverna.formats.st_chat import read_chat, write_chat
from taverna.model.chat import CharacterRef, Node, NodeRole, new_id
from taverna.services.interchange import InterchangeService, build_tree, bulk, export_tree
from taverna.store.repository import NewChat
from taverna.store.sql import SqlStore, open_store

TEXT = "The lantern swings in the wind above the ferry house door. " * 7


def make_chat(count: int) -> str:
    """A chat file as SillyTavern writes it."""
    compact = {"ensure_ascii": False, "separators": (",", ":")}
    header = {
        "user_name": "Traveler",
        "character_name": "Aria",
        "create_date": "2024-01-01@12h00m00s",
        "chat_metadata": {"note_prompt": "", "variables": {"n": 1}},
    }
    lines = [json.dumps(header, **compact)]  # type: ignore[arg-type]
    for i in range(count):
        date = f"January {1 + i // 50000}, 2024 {1 + (i // 60) % 12}:{i % 60:02d}pm"
        if i % 2:
            message = {
                "name": "Traveler",
                "is_user": True,
                "is_system": False,
                "send_date": date,
                "mes": f"{i}. {TEXT[:400]}",
                "extra": {"isSmallSys": False},
            }
        else:
            swipes = [f"{i}a. {TEXT[:400]}", f"{i}b. {TEXT[:400]}"]
            info = [{"send_date": date, "extra": {"api": "openai", "model": "gpt-4o"}}] * 2
            message = {
                "extra": {"api": "openai", "model": "gpt-4o"},
                "name": "Aria",
                "is_user": False,
                "send_date": date,
                "mes": swipes[1],
                "swipe_id": 1,
                "swipes": swipes,
                "swipe_info": info,
            }
        lines.append(json.dumps(message, **compact))  # type: ignore[arg-type]
    return "\n".join(lines)


def make_forked_chat(store: SqlStore, count: int) -> str:
    """A chat of `count` messages on its path, 2 candidates at every one of them."""
    chat_id = new_id()
    start = datetime(2024, 1, 1, tzinfo=UTC)
    nodes: list[Node] = []
    selections: dict[str, str] = {}
    parent: str | None = None

    def node(parent_id: str | None, depth: int, role: NodeRole, text: str) -> Node:
        made = Node(
            id=new_id(),
            chat_id=chat_id,
            parent_id=parent_id,
            role=role,
            content=text,
            speaker="Traveler" if role is NodeRole.USER else "Aria",
            created=start + timedelta(seconds=len(nodes)),
            depth=depth,
        )
        nodes.append(made)
        return made

    for i in range(count):
        role = NodeRole.USER if i % 2 == 0 else NodeRole.ASSISTANT
        older = node(parent, i, role, f"{i}x. {TEXT[:400]}")
        if role is NodeRole.USER:  # the turn before an edit-and-resend, with its reply
            node(older.id, i + 1, NodeRole.ASSISTANT, f"{i}r. {TEXT[:400]}")
        chosen = node(parent, i, role, f"{i}. {TEXT[:400]}")
        selections[parent or ""] = chosen.id
        parent = chosen.id
    store.import_tree(
        NewChat(title="forked", characters=(CharacterRef("Aria"),), id=chat_id),
        nodes,
        active_leaf_id=parent,
        selections=selections,
    )
    return chat_id


def forked_export(folder: Path, count: int) -> dict[str, float | int]:
    """Export a chat with forks everywhere: time, then peak traced memory of a second run."""
    store = open_store(folder / "forked")
    chat_id = make_forked_chat(store, count)
    service = InterchangeService(store)
    figures: dict[str, float | int] = {"forked_messages": count}
    figures["forked_nodes"] = len(store.tree(chat_id).nodes)
    start = time.perf_counter()
    written = service.export_to(chat_id, folder / "forked-out-1")
    figures["forked_export_s"] = time.perf_counter() - start
    figures["forked_files"] = len(written)
    figures["forked_bytes"] = sum(p.stat().st_size for p in written)
    tracemalloc.start()
    service.export_to(chat_id, folder / "forked-out-2")
    figures["forked_export_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    store.close()
    return figures


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    forked = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    folder = Path(tempfile.mkdtemp(prefix="taverna-bench-"))
    source = folder / "big.jsonl"
    text = make_chat(count)
    source.write_text(text, encoding="utf-8")
    figures: dict[str, float | int] = {"messages": count}

    with bulk():
        start = time.perf_counter()
        document = read_chat(source.read_bytes(), source=str(source))
        figures["read_jsonl_s"] = time.perf_counter() - start
        start = time.perf_counter()
        built = build_tree(document, name="big")
        figures["build_tree_s"] = time.perf_counter() - start
        figures["nodes"] = len(built.nodes)

    store = open_store(folder / "data")
    service = InterchangeService(store)
    start, cpu = time.perf_counter(), time.process_time()
    (imported,) = service.import_files([source], find_linked=False)
    figures["import_total_s"] = time.perf_counter() - start
    # CPU time of this process: what the import costs when the machine is shared
    figures["import_cpu_s"] = time.process_time() - cpu
    figures["store_import_s"] = (
        figures["import_total_s"] - figures["read_jsonl_s"] - figures["build_tree_s"]
    )

    cpu = time.process_time()
    with bulk():
        start = time.perf_counter()
        tree = store.tree(imported.chat.id)
        figures["store_read_tree_s"] = time.perf_counter() - start
        start = time.perf_counter()
        files = export_tree(tree)
        out = write_chat(files[0].document)
        figures["export_from_tree_s"] = time.perf_counter() - start
    figures["export_total_s"] = figures["store_read_tree_s"] + figures["export_from_tree_s"]
    figures["export_cpu_s"] = time.process_time() - cpu
    figures["round_trip_equal"] = int(out == text)
    store.close()
    figures.update(forked_export(folder, forked))

    print(f"{'step':<22}{'value':>12}")
    for key, value in figures.items():
        shown = f"{value:.2f}" if isinstance(value, float) else str(value)
        print(f"{key:<22}{shown:>12}")
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}))


if __name__ == "__main__":
    main()
