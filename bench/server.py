"""Server benchmark: the chat view and the inspector's next-prompt preview of a long chat.

A chat of the sample character with 1,001 messages (~400 characters each) is read
through the real app (FastAPI's test client, SQLite in a temporary data folder): the
first request (cold: nothing counted yet) and the median of the following ones (warm:
the process's token-count cache holds the history). Prints a table, then one line of
JSON with the figures.

    python bench/server.py [--messages 1000] [--repeat 15]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from fastapi.testclient import TestClient

from taverna.model.chat import NodeRole
from taverna.server.app import create_app
from taverna.server.context import open_context
from taverna.services.chats.editing import start_chat
from taverna.services.house.workspace import seed_samples
from taverna.services.library.service import LibraryKind, LibraryService

WORDS = [
    "the",
    "lantern",
    "road",
    "forest",
    "quiet",
    "she",
    "he",
    "harbour",
    "river",
    "tide",
    "rope",
    "light",
    "said",
    "and",
]


def sentence(rng: random.Random, size: int = 400) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < size:
        words.append(rng.choice(WORDS))
    return " ".join(words).capitalize() + "."


def timed(client: TestClient, url: str, repeat: int) -> tuple[float, float]:
    """(cold ms, warm median ms) of GET `url`."""
    runs = []
    for _ in range(repeat + 1):
        start = time.perf_counter()
        response = client.get(url)
        runs.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, response.text
    return runs[0], statistics.median(runs[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        ctx = open_context(Path(tmp) / "data")
        seed_samples(ctx.library())
        card = LibraryService(ctx.store).find(LibraryKind.CHARACTER, "Ione Calder")
        assert card is not None
        chat = start_chat(ctx.chats, card.id, title="bench", owner="")
        revision = chat.revision
        for i in range(args.messages):
            role = NodeRole.USER if i % 2 == 0 else NodeRole.ASSISTANT
            revision = ctx.chats.append(
                chat.id, role, sentence(rng), revision=revision
            ).chat.revision
        total = len(ctx.chats.active_path(chat.id).nodes)
        with TestClient(create_app(ctx)) as client:
            view_cold, view_warm = timed(client, f"/api/chats/{chat.id}", args.repeat)
            prompt_cold, prompt_warm = timed(client, f"/api/chats/{chat.id}/prompt", args.repeat)
    rows = [
        (f"chat view, {total:,} messages", view_cold, view_warm),
        (f"next-prompt preview, {total:,} messages", prompt_cold, prompt_warm),
    ]
    print(f"{'':44} {'cold ms':>9} {'warm ms':>9}")
    for name, cold, warm in rows:
        print(f"{name:44} {cold:9.1f} {warm:9.1f}")
    print(
        json.dumps(
            {
                "messages": total,
                "chat_view_cold_ms": round(view_cold, 1),
                "chat_view_warm_ms": round(view_warm, 1),
                "prompt_preview_cold_ms": round(prompt_cold, 1),
                "prompt_preview_warm_ms": round(prompt_warm, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
