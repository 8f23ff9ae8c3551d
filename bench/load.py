"""Load benchmark: many people streaming at once through one real `taverna serve`.

A temporary data folder gets the sample character and `--chats` chats of it (default
200); a stub model server (OpenAI Chat Completions, in a process of its own) answers
every request after `--first-delay` seconds with `--tokens` tokens `--gap` seconds
apart. All chats then send a message at the same moment, each over its own connection,
and follow their generation's events (SSE) to the end, as a page does:

- time to first token, from sending `POST /api/chats/ID/generate` until the first text
  event arrives; "added" is that minus the stub's scripted first delay, which is what
  taverna (and the stub's own overhead under the same load) adds;
- the POST's own answer time;
- errors: any request that failed, any stream that did not end with the reply saved,
  any saved reply whose text is not what the stub sent;
- the server's resident memory after the burst (VmRSS) and its peak (VmHWM).

`--rounds N` repeats the burst (each chat sends again), so memory growth between the
first and the last burst shows. Prints a table, then one line of JSON; the machine's load
average is printed beside the figures.

    python bench/load.py [--chats 200] [--rounds 2] [--first-delay 0.2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.stubs.taverna_server import TavernaServer  # noqa: E402

TARGET_P99_ADDED_MS = 250.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


class StubProcess:
    """The stub model server in a child process, scripted over its control endpoints."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.stubs"], cwd=ROOT, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        if not self.url:
            raise RuntimeError("the stub model server did not start")
        self.control = httpx.Client(base_url=self.url, timeout=60)

    def script(self, count: int, tokens: list[str], first_delay: float, gap: float) -> None:
        reply = {"tokens": tokens, "first_delay": first_delay, "delay": gap}
        self.control.post("/_stub/script", json=[reply] * count).raise_for_status()

    def close(self) -> None:
        self.control.close()
        self.process.terminate()
        self.process.wait(timeout=10)


async def one_turn(
    client: httpx.AsyncClient, chat_id: str, revision: int, text: str, expected: str
) -> dict[str, Any]:
    """Send one message and follow its events to the end; times in seconds."""
    began = time.perf_counter()
    response = await client.post(
        f"/api/chats/{chat_id}/generate",
        json={"kind": "normal", "text": text, "revision": revision},
    )
    posted = time.perf_counter() - began
    if response.status_code != 202:
        return {"error": f"generate answered {response.status_code}: {response.text[:200]}"}
    task = response.json()["task"]["id"]
    first: float | None = None
    event = ""
    outcome: dict[str, Any] = {}
    async with client.stream("GET", f"/api/tasks/{task}/events") as stream:
        async for line in stream.aiter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                if event == "delta" and first is None:
                    first = time.perf_counter() - began
                if event in ("done", "error", "cancelled"):
                    outcome = {"event": event, **json.loads(line[6:])}
                    break
    if outcome.get("event") != "done":
        return {"error": f"the generation ended with {outcome or 'no end event'}"}
    if outcome.get("text") != expected:
        return {"error": f"saved {outcome.get('text')!r}, the stub sent {expected!r}"}
    if first is None:
        return {"error": "no text event before the end"}
    return {"first": first, "posted": posted, "whole": time.perf_counter() - began}


async def burst(url: str, chats: dict[str, int], text: str, expected: str) -> list[dict[str, Any]]:
    """Every chat sends at once, each over a connection of its own."""
    limits = httpx.Limits(max_connections=len(chats) * 2 + 10, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as client:
        return await asyncio.gather(
            *(one_turn(client, chat, rev, text, expected) for chat, rev in chats.items()),
            return_exceptions=False,
        )


def revisions(client: httpx.Client) -> dict[str, int]:
    return {c["id"]: int(c["revision"]) for c in client.get("/api/chats").json()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chats", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=20)
    parser.add_argument("--first-delay", type=float, default=0.2)
    parser.add_argument("--gap", type=float, default=0.02)
    args = parser.parse_args()

    tokens = [f" word{i}" for i in range(args.tokens)]
    expected = "".join(tokens).strip()
    stub = StubProcess()
    with tempfile.TemporaryDirectory() as tmp:
        server = TavernaServer(Path(tmp) / "data", Path(tmp) / "serve.log").start()
        try:
            with httpx.Client(base_url=server.url, timeout=60) as client:
                client.post(
                    "/api/connections",
                    json={
                        "name": "stub",
                        "api": "openai-compatible",
                        "url": f"{stub.url}/v1",
                        "model": "stub-model",
                        "default": True,
                    },
                ).raise_for_status()
                character = client.get("/api/characters").raise_for_status().json()[0]["id"]
                ours = {
                    client.post(
                        "/api/chats", json={"character_id": character, "title": f"load {i}"}
                    )
                    .raise_for_status()
                    .json()["id"]
                    for i in range(args.chats)
                }
                results: list[dict[str, Any]] = []
                memory: list[tuple[float, float]] = []
                for round_number in range(args.rounds):
                    chats = {c: r for c, r in revisions(client).items() if c in ours}
                    stub.script(len(chats), tokens, args.first_delay, args.gap)
                    began = time.perf_counter()
                    found = asyncio.run(burst(server.url, chats, f"turn {round_number}", expected))
                    elapsed = time.perf_counter() - began
                    memory.append(server.memory_mb())
                    errors = [r["error"] for r in found if "error" in r]
                    ok = [r for r in found if "error" not in r]
                    results.append(
                        {
                            "chats": len(chats),
                            "seconds": elapsed,
                            "errors": len(errors),
                            "first_error": errors[0] if errors else None,
                            "first": [r["first"] for r in ok],
                            "posted": [r["posted"] for r in ok],
                        }
                    )
        finally:
            server.stop()
            stub.close()

    load = os.getloadavg()[0]
    print(
        f"{args.chats} chats streaming at once through one `taverna serve`, {args.rounds} bursts;"
        f" stub: first token after {args.first_delay * 1000:.0f} ms, {args.tokens} tokens"
        f" {args.gap * 1000:.0f} ms apart; load average {load:.2f} on {os.cpu_count()} CPUs"
    )
    print(
        f"{'burst':>5}  {'errors':>6}  {'TTFT p50':>9}  {'TTFT p99':>9}  {'added p50':>9}"
        f"  {'added p99':>9}  {'POST p50':>8}  {'POST p99':>8}  {'RSS MB':>6}  {'seconds':>7}"
    )
    figures: dict[str, Any] = {"load_average": load, "cpus": os.cpu_count(), "bursts": []}
    for i, (result, (rss, peak)) in enumerate(zip(results, memory, strict=True)):
        first = [t * 1000 for t in result["first"]] or [float("nan")]
        posted = [t * 1000 for t in result["posted"]] or [float("nan")]
        added = [t - args.first_delay * 1000 for t in first]
        row = {
            "errors": result["errors"],
            "first_error": result["first_error"],
            "ttft_p50_ms": round(percentile(first, 50), 1),
            "ttft_p99_ms": round(percentile(first, 99), 1),
            "added_p50_ms": round(percentile(added, 50), 1),
            "added_p99_ms": round(percentile(added, 99), 1),
            "post_p50_ms": round(statistics.median(posted), 1),
            "post_p99_ms": round(percentile(posted, 99), 1),
            "rss_mb": round(rss, 1),
            "peak_mb": round(peak, 1),
            "seconds": round(result["seconds"], 2),
        }
        figures["bursts"].append(row)
        print(
            f"{i + 1:>5}  {row['errors']:>6}  {row['ttft_p50_ms']:>9.1f}  {row['ttft_p99_ms']:>9.1f}"
            f"  {row['added_p50_ms']:>9.1f}  {row['added_p99_ms']:>9.1f}  {row['post_p50_ms']:>8.1f}"
            f"  {row['post_p99_ms']:>8.1f}  {row['rss_mb']:>6.1f}  {row['seconds']:>7.2f}"
        )
        if row["first_error"]:
            print(f"       first error: {row['first_error']}")
    worst = max(b["added_p99_ms"] for b in figures["bursts"])
    errors = sum(b["errors"] for b in figures["bursts"])
    verdict = "PASS" if worst <= TARGET_P99_ADDED_MS and errors == 0 else "MISS"
    print(
        f"time to first token added by taverna, p99: {worst:.1f} ms"
        f" (target {TARGET_P99_ADDED_MS:.0f} ms, errors 0): {verdict}"
    )
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
