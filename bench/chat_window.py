"""Chat window benchmark: what opening, paging and editing a 100,000-message chat costs.

The page never loads a whole chat: it asks for a window (the last messages), older pages
by cursor, and a write answers with only what it changed. Each of those should cost the
window, not the chat. A chat of 100,000 messages (~330 characters each, one path, built
through the store's bulk import in a temporary data folder) is read through the real app:

- the chat view (the last window) as the route builds it, best of 5 (target 30 ms);
- a page from the middle over HTTP (FastAPI's test client; target 500 ms);
- the answer to an edit near the end: the changed messages only (target 500 ms).

Prints each figure with its target and ratio, the response's size, and the machine's
load; then one line of JSON.

    python bench/chat_window.py [--messages 100000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastapi.testclient import TestClient

from taverna.model.chat import CharacterRef, Node, NodeRole, new_id
from taverna.server import usecases
from taverna.server.app import create_app
from taverna.server.context import AppContext, open_context
from taverna.store import NewChat

TEXT = "The lamp burns low over the map table. " * 8
VIEW_TARGET_MS = 30.0
PAGE_TARGET_MS = 500.0
EDIT_TARGET_MS = 500.0


def long_chat(ctx: AppContext, count: int) -> tuple[str, list[Node]]:
    """A chat of `count` messages on one path, imported in bulk."""
    path: list[Node] = []
    parent: str | None = None
    for i in range(count):
        role = NodeRole.ASSISTANT if i % 2 == 0 else NodeRole.USER
        speaker = "Mira" if role is NodeRole.ASSISTANT else "Ann"
        node = Node(new_id(), "", parent, role, f"message {i}. {TEXT}", speaker=speaker)
        path.append(node)
        parent = node.id
    chat = ctx.store.import_tree(
        NewChat(title="long", characters=(CharacterRef("Mira", None),), user_name="Ann"),
        path,
        active_leaf_id=parent,
    )
    return chat.id, path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ctx = open_context(Path(tmp) / "data")
        chat_id, path = long_chat(ctx, args.messages)
        views = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            usecases.chat_view(ctx, chat_id)
            views.append((time.perf_counter() - started) * 1000)
        with TestClient(create_app(ctx)) as client:
            response = client.get(f"/api/chats/{chat_id}")
            assert response.status_code == 200, response.text
            size_kb = len(response.content) / 1000
            revision = response.json()["revision"]
            middle = path[len(path) // 2].id
            started = time.perf_counter()
            paged = client.get(f"/api/chats/{chat_id}?before={middle}")
            page_ms = (time.perf_counter() - started) * 1000
            assert paged.status_code == 200, paged.text
        ctx.chats.edit(chat_id, path[-2].id, "changed", revision=revision)
        started = time.perf_counter()
        usecases.changed_view(ctx, chat_id, below=path[-3].id)
        edit_ms = (time.perf_counter() - started) * 1000
    load = os.getloadavg()
    figures = {
        "messages": args.messages,
        "view_ms": round(min(views), 1),
        "view_ratio": round(min(views) / VIEW_TARGET_MS, 2),
        "view_kb": round(size_kb, 1),
        "middle_page_ms": round(page_ms, 1),
        "middle_page_ratio": round(page_ms / PAGE_TARGET_MS, 2),
        "edit_answer_ms": round(edit_ms, 1),
        "edit_answer_ratio": round(edit_ms / EDIT_TARGET_MS, 2),
        "load": [round(x, 2) for x in load],
    }
    print(f"chat of {args.messages:,} messages (load {load[0]:.2f})")
    print(f"  window (best of {args.repeat}): {figures['view_ms']} ms, {size_kb:.1f} KB")
    print(f"    target {VIEW_TARGET_MS:.0f} ms, ratio {figures['view_ratio']}")
    print(
        f"  page from the middle: {figures['middle_page_ms']} ms (ratio {figures['middle_page_ratio']})"
    )
    print(f"  edit's answer: {figures['edit_answer_ms']} ms (ratio {figures['edit_answer_ratio']})")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
