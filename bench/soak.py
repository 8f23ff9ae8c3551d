"""Soak benchmark: new chats for an hour, and whether the workers' memory stays put.

Memory that grows with every new chat is a leak, or a cache bounded by its count rather
than its bytes; memory that levels off is a warm-up. Here chats are made new all the time
(`--at-once` at a time, each given `--turns` turns with recall on, then left for a new one),
and every worker's resident memory is printed each minute: VmRSS, its anonymous and
file-backed parts, and PSS (the pages a worker shares with others counted as its share);
and the machine's embedding host's (the local embedding model, one process shared by
every worker: taverna/providers/embedding_host.py). The last half of the run is FLAT when
each worker's VmRSS in it stays within `--flat` (3%) of its lowest.

Without `--url`, a temporary data folder is served by `--workers` `taverna serve`
processes (several need PostgreSQL in `$TAVERNA_TEST_DATABASE_URL`, and Redis), with the
stub model server answering every turn (bench/load.py's deployment). With `--url URL
--pid PID` (each repeated, one a worker), a running server is soaked instead: its
default connection answers the turns, and recall is switched on in its settings.

    python bench/soak.py                  # 60 minutes
    python bench/soak.py --minutes 3      # the quick check
    python bench/soak.py --workers 2 --minutes 60
    python bench/soak.py --url http://127.0.0.1:8000 --pid 1234 --minutes 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import Deployment, one_turn, rss_parts  # bench/load.py, beside this

TOKENS = [f" word{i}" for i in range(12)]
# The person's messages: varied enough that recall has something to find.
LINES = (
    "Tell me about the lighthouse on the northern cliff and who keeps it.",
    "The storm broke the bridge; we need another way across the river.",
    "I trade three silver coins for the map of the old mines.",
    "Do you remember the song the sailors sang at the harbour inn?",
    "Let us rest by the fire and count what is left of our supplies.",
)


def memory(pid: int) -> dict[str, float]:
    """VmRSS, RssAnon, RssFile and Pss of one process, in MB."""
    found = rss_parts(pid)
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            found["Pss"] = int(line.split()[1]) / 1024
    return found


def embedding_host() -> int | None:
    """The pid of the machine's embedding host, while one runs."""
    from taverna.providers.embedding_host import socket_path

    try:
        pid = int(socket_path().with_suffix(".pid").read_text())
        Path(f"/proc/{pid}/status").stat()
    except (OSError, ValueError, ImportError):
        return None
    return pid


async def new_chats(
    client: httpx.AsyncClient,
    character: str,
    turns: int,
    deadline: float,
    counts: dict[str, int],
    errors: list[str],
) -> None:
    """New chats one after the other until `deadline`, each given `turns` turns."""
    while time.monotonic() < deadline:
        try:
            made = await client.post(
                "/api/chats", json={"character_id": character, "title": "soak"}
            )
            chat_id = made.raise_for_status().json()["id"]
            counts["chats"] += 1
            for turn in range(turns):
                view = (await client.get(f"/api/chats/{chat_id}")).raise_for_status().json()
                text = LINES[(counts["turns"] + turn) % len(LINES)]
                done = await one_turn(client, client, chat_id, int(view["revision"]), text, None)
                if "error" in done:
                    errors.append(done["error"])
                counts["turns"] += 1
                if time.monotonic() >= deadline:
                    return
        except httpx.HTTPError as exc:
            errors.append(f"{type(exc).__name__}: {exc}")


async def sampled(
    pids: list[int], began: float, deadline: float, every: float, samples: list[dict[str, Any]]
) -> None:
    """Every worker's memory each `every` seconds until `deadline`, printed as it comes."""
    while True:
        now = time.monotonic()
        sample = {"minute": (now - began) / 60, "workers": [memory(pid) for pid in pids]}
        samples.append(sample)
        shown = "  ".join(
            f"w{i} rss {m['VmRSS']:.0f} (anon {m['RssAnon']:.0f} file {m['RssFile']:.0f}) "
            f"pss {m.get('Pss', 0):.0f}"
            for i, m in enumerate(sample["workers"])
        )
        host = embedding_host()
        if host is not None:
            sample["host"] = memory(host)
            shown += f"  embedding host rss {sample['host']['VmRSS']:.0f}"
        print(f"{sample['minute']:5.1f} min  {shown}", flush=True)
        if now >= deadline:
            return
        await asyncio.sleep(min(every, max(0.0, deadline - now)))


def flatness(samples: list[dict[str, Any]], minutes: float, part: str = "VmRSS") -> list[float]:
    """Each worker's memory (`part`) spread over the last half of the run, as a share of
    its lowest."""
    last = [s for s in samples if s["minute"] >= minutes / 2 - 1e-6]
    spreads = []
    for i in range(len(samples[0]["workers"])):
        values = [s["workers"][i][part] for s in last]
        spreads.append((max(values) - min(values)) / min(values))
    return spreads


async def soak(
    urls: list[str], pids: list[int], args: argparse.Namespace
) -> tuple[list[dict[str, Any]], dict[str, int], list[str]]:
    counts = {"chats": 0, "turns": 0}
    errors: list[str] = []
    samples: list[dict[str, Any]] = []
    timeout = httpx.Timeout(120.0)
    clients = [httpx.AsyncClient(base_url=url, timeout=timeout) for url in urls]
    try:
        characters = (await clients[0].get("/api/characters")).raise_for_status().json()
        character = characters[0]["id"]
        began = time.monotonic()
        deadline = began + args.minutes * 60
        await asyncio.gather(
            sampled(pids, began, deadline, args.every, samples),
            *(
                new_chats(
                    clients[i % len(clients)], character, args.turns, deadline, counts, errors
                )
                for i in range(args.at_once)
            ),
        )
    finally:
        for client in clients:
            await client.aclose()
    return samples, counts, errors


def prepare(url: str, stub_url: str | None, recall: bool) -> None:
    """The stub as the default connection (when there is one), and recall on."""
    with httpx.Client(base_url=url, timeout=60) as client:
        if stub_url is not None:
            connection = {
                "name": "stub",
                "api": "openai-compatible",
                "url": f"{stub_url}/v1",
                "model": "stub-model",
                "default": True,
            }
            client.post("/api/connections", json=connection).raise_for_status()
        if recall:
            client.put("/api/recall-settings", json={"enabled_chats": True}).raise_for_status()


def report(
    args: argparse.Namespace,
    samples: list[dict[str, Any]],
    counts: dict[str, int],
    errors: list[str],
) -> bool:
    spreads = flatness(samples, args.minutes)
    # The anonymous part alone (the heap): the file-backed part grows with the database
    # SQLite maps as the new chats fill it, pages the kernel can take back.
    heap = flatness(samples, args.minutes, "RssAnon")
    flat = all(spread <= args.flat for spread in spreads)
    first, last = samples[0]["workers"], samples[-1]["workers"]
    for i, (a, b) in enumerate(zip(first, last, strict=True)):
        growth = (b["VmRSS"] - a["VmRSS"]) / a["VmRSS"]
        print(
            f"worker {i}: VmRSS {a['VmRSS']:.0f} -> {b['VmRSS']:.0f} MB ({growth:+.1%}), "
            f"PSS {a.get('Pss', 0):.0f} -> {b.get('Pss', 0):.0f} MB; last half's spread "
            f"{spreads[i]:.1%} (anonymous part alone {heap[i]:.1%})"
        )
    print(
        f"{counts['chats']} new chats, {counts['turns']} turns, {len(errors)} errors; "
        f"last half {'FLAT' if flat else 'NOT FLAT'} (within {args.flat:.0%}); "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    for error in errors[:5]:
        print(f"  error: {error}", file=sys.stderr)
    print(
        json.dumps(
            {
                "flat": flat,
                "spreads": spreads,
                "heap_spreads": heap,
                **counts,
                "errors": len(errors),
                "samples": samples,
            }
        )
    )
    return flat and not errors


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--every", type=float, default=60.0, help="seconds between samples")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--redis", default=os.environ.get("TAVERNA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    )
    parser.add_argument("--at-once", type=int, default=4, help="chats made new at a time")
    parser.add_argument("--turns", type=int, default=3, help="turns each new chat is given")
    parser.add_argument("--flat", type=float, default=0.03)
    parser.add_argument("--no-recall", dest="recall", action="store_false")
    parser.add_argument("--url", action="append", default=[], help="a running worker")
    parser.add_argument("--pid", type=int, action="append", default=[], help="its process")
    args = parser.parse_args()
    if len(args.url) != len(args.pid):
        parser.error("give one --pid for each --url")
    return args


def main() -> int:
    args = parse()
    if args.url:
        prepare(args.url[0], None, args.recall)
        samples, counts, errors = asyncio.run(soak(args.url, args.pid, args))
        return 0 if report(args, samples, counts, errors) else 1
    with tempfile.TemporaryDirectory() as tmp:
        deployment = Deployment(Path(tmp), args.workers, args.redis, probe=False)
        try:
            deployment.stub.default(TOKENS, 0.05, 0.01)
            prepare(deployment.urls[0], deployment.stub.url, args.recall)
            pids = [s.process.pid for s in deployment.servers if s.process is not None]
            samples, counts, errors = asyncio.run(soak(deployment.urls, pids, args))
            if errors:
                print(deployment.log_tails(), file=sys.stderr)
        finally:
            deployment.close()
    return 0 if report(args, samples, counts, errors) else 1


if __name__ == "__main__":
    sys.exit(main())
