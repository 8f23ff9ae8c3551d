"""Kept-bytes benchmark: the memory a server keeps per chat message between turns, in process.

A server keeps, between turns, what the next turn of each recently used chat reads: the
end of its path (`PathEnds`), the messages as the engine reads them, the prompt parts,
scan views and token counts of unchanged messages (`TurnMemo`, `MessageCost`,
`CountCache`). All of it grows with the window a chat's prompt holds, so a server's memory
grows with its chats' windows; this measures how much each kept message costs.

The services are built over a temporary SQLite data folder as `taverna serve` builds them
(`open_workspace`, the new install's presets and sample character, an OpenAI-compatible
connection that is never called). For each size in `--sizes`, `--chats` SillyTavern chats
of that many short messages (about 40 characters, as short as `bench/load.py`'s soak) are
imported; with `--written`, written instead one turn at a time as a server's turns write
them (the person's message, then a reply with its generation record; slower). A small
chat's prompt is previewed first, so the tokenizer, the library's parsed documents and the
compiled lorebook are made before measuring. Then, under tracemalloc, each chat gets
`--turns` turns: a turn is written and the next prompt is previewed (a dry run, as the
soak's and a page's previews are). What is still
allocated after a garbage collection is what the turns keep; it is divided by the messages
the kept path ends hold, and attributed to the innermost `taverna` frame that allocated it.
Prints, for each size, the bytes per kept message and the sites that keep the most, then
one line of JSON.

    python bench/kept_bytes.py [--sizes 200,2000] [--chats 4] [--turns 3] [--top 12]
    python bench/kept_bytes.py --written --sizes 200
"""

from __future__ import annotations

import argparse
import gc
import json
import linecache
import os
import sys
import tempfile
import time
import tracemalloc
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from taverna.model.chat import CharacterRef, GenerationInfo, NodeRole  # noqa: E402
from taverna.services.house.workspace import Workspace, open_workspace, seed_presets, seed_samples  # noqa: E402
from taverna.services.interchange.library_import import LibraryImport  # noqa: E402
from taverna.services.library.service import LibraryKind  # noqa: E402

PACKAGE = str(ROOT / "taverna") + os.sep
FRAMES = 40  # deep enough to reach a taverna frame from inside SQLAlchemy and the driver


@contextmanager
def workspace() -> Iterator[Workspace]:
    """A server's services over a new data folder: the seeded library, a connection."""
    os.environ.pop("TAVERNA_DATABASE_URL", None)  # the data folder's own SQLite
    with tempfile.TemporaryDirectory() as folder:
        ws = open_workspace(Path(folder), background_backups=False, plugins=False)
        try:
            library = ws.library()
            seed_presets(library)
            seed_samples(library)
            ws.connections.add(
                "stub",
                "openai-compatible",
                url="http://127.0.0.1:9/v1",
                model="stub-model",
                default=True,
            )
            yield ws
        finally:
            ws.close()


def chat_file(messages: int, character: str, label: str) -> bytes:
    """A SillyTavern chat file of `messages` lines of about 40 characters, each its own
    (text and time), the character's with what SillyTavern writes of a generated reply."""
    lines: list[dict[str, Any]] = [
        {"user_name": "User", "character_name": character, "chat_metadata": {}}
    ]
    for i in range(messages):
        sent = f"2026-01-{1 + i // 1440:02d}T{i // 60 % 24:02d}:{i % 60:02d}:00.000Z"
        if i % 2 == 0:
            line = {
                "name": "User",
                "is_user": True,
                "send_date": sent,
                "mes": f"{label} line {i}: I walk on to the harbour.",
            }
        else:
            line = {
                "name": character,
                "is_user": False,
                "send_date": sent,
                "mes": f"{label} line {i}: The lantern swings, traveller.",
                "gen_started": sent,
                "gen_finished": sent,
                "extra": {"api": "openai", "model": "gpt-4o-mini"},
            }
        lines.append(line)
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def import_chats(ws: Workspace, count: int, messages: int, prefix: str) -> list[str]:
    library = ws.library()
    character = library.documents(LibraryKind.CHARACTER)[0]
    return [
        LibraryImport(library)
        .import_chat(
            chat_file(messages, character.name, f"{prefix}{i}"),
            f"{prefix}{i}.jsonl",
            character_id=character.id,
        )
        .chat.id
        for i in range(count)
    ]


def written_chats(ws: Workspace, count: int, messages: int, prefix: str) -> list[str]:
    """`count` chats of `messages` messages written one turn at a time, as a server's
    turns write them (see `write_turn`)."""
    character = ws.library().documents(LibraryKind.CHARACTER)[0]
    made = []
    for i in range(count):
        chat = ws.chats.create_chat(
            f"{prefix}{i}",
            characters=(CharacterRef(character.name, character.id),),
            user_name="User",
        ).chat
        for number in range(messages // 2):
            write_turn(ws, chat.id, f"{prefix}{i} {number}")
        made.append(chat.id)
    return made


def write_turn(ws: Workspace, chat_id: str, label: str) -> None:
    """A person's message, then a reply with its generation record, as a turn stores them."""
    chat = ws.chats.get_chat(chat_id)
    chat = ws.chats.append(
        chat.id,
        NodeRole.USER,
        f"{label}: I ask about the tide.",
        revision=chat.revision,
        speaker=chat.user_name,
    ).chat
    now = datetime.now(UTC)
    ws.chats.add_reply(
        chat.id,
        chat.active_leaf_id,
        f"{label}: It turns at dusk, traveller.",
        revision=chat.revision,
        speaker=chat.characters[0].name,
        generation=GenerationInfo(
            provider="openai-compatible",
            model="stub-model",
            started=now,
            finished=now,
            prompt_tokens=900,
            completion_tokens=12,
            finish_reason="stop",
            extras={"connection": "stub", "kind": "normal", "seconds": 0.21},
        ),
        label="normal",
    )


def turn(ws: Workspace, chat_id: str, number: int) -> int:
    """A turn written (see `write_turn`), then the next prompt previewed; the messages
    the prompt's history holds."""
    write_turn(ws, chat_id, f"turn {number}")
    prompt = ws.generation.preview(chat_id)
    return sum(1 for item in prompt.ledger.items if item.kind == "history" and item.included)


def site(traceback: tracemalloc.Traceback) -> str:
    """The innermost frame of the package (else the innermost frame) as `path:line`."""
    for frame in reversed(traceback):
        if frame.filename.startswith(PACKAGE):
            return f"{frame.filename[len(str(ROOT)) + 1 :]}:{frame.lineno}"
    frame = traceback[-1]
    return f"{frame.filename}:{frame.lineno}"


def measure(size: int, chats: int, turns: int, written: bool) -> dict[str, Any]:
    with workspace() as ws:
        made = written_chats if written else import_chats
        ids = made(ws, chats, size, f"s{size}-")
        (warm,) = import_chats(ws, 1, 20, "warm-")
        ws.generation.preview(warm)
        paths = ws.generation.paths
        gc.collect()
        tracemalloc.start(FRAMES)
        began = time.perf_counter()
        in_prompt = 0
        for number in range(turns):
            in_prompt = sum(turn(ws, chat_id, number) for chat_id in ids)
        seconds = time.perf_counter() - began
        gc.collect()
        snapshot = tracemalloc.take_snapshot()
        tracemalloc.stop()
        kept = sum(paths.messages_held(chat_id) for chat_id in ids)
        sites: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for stat in snapshot.statistics("traceback"):
            found = sites[site(stat.traceback)]
            found[0] += stat.size
            found[1] += stat.count
        total = sum(size for size, _ in sites.values())
        del snapshot
    return {
        "messages": size,
        "chats": chats,
        "written": written,
        "turns": turns,
        "kept_messages": kept,
        "prompt_messages": in_prompt,
        "retained_bytes": total,
        "bytes_per_kept_message": total / max(kept, 1),
        "seconds": round(seconds, 1),
        "sites": sorted(
            (
                {"site": name, "bytes": size, "blocks": count}
                for name, (size, count) in sites.items()
            ),
            key=lambda s: -s["bytes"],
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="200,2000", help="messages per chat, comma-separated")
    parser.add_argument("--chats", type=int, default=4, help="chats of each size")
    parser.add_argument("--turns", type=int, default=3, help="turns of each chat measured")
    parser.add_argument("--top", type=int, default=12, help="allocation sites shown")
    parser.add_argument(
        "--written",
        action="store_true",
        help="chats written turn by turn as a server writes them, not imported (slower)",
    )
    args = parser.parse_args()
    results = [
        measure(int(size), args.chats, args.turns, args.written)
        for size in args.sizes.split(",")
        if size
    ]
    for result in results:
        kept = max(result["kept_messages"], 1)
        made = "written" if result["written"] else "imported"
        print(
            f"{result['chats']} {made} chats of {result['messages']} messages,"
            f" {result['turns']} turns"
            f" ({result['seconds']} s under tracemalloc): {result['kept_messages']} messages"
            f" kept, {result['prompt_messages']} in the prompts,"
            f" {result['retained_bytes'] / 1e6:.2f} MB retained,"
            f" {result['bytes_per_kept_message']:.0f} bytes per kept message"
        )
        print(f"  {'bytes/msg':>9} {'blocks/msg':>10}  site")
        for found in result["sites"][: args.top]:
            file, _, line = found["site"].rpartition(":")
            code = linecache.getline(str(ROOT / file), int(line)).strip()
            print(
                f"  {found['bytes'] / kept:>9.0f} {found['blocks'] / kept:>10.2f}"
                f"  {found['site']}  {code[:60]}"
            )
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    json.dump(
        {"results": [{**r, "sites": r["sites"][: args.top]} for r in results]},
        sys.stdout,
    )
    print()


if __name__ == "__main__":
    main()
