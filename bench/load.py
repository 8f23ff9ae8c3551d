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
- the server's resident memory after the burst (VmRSS) and its peak (VmHWM);
- CPU time per turn (user + system, from /proc/PID/stat before and after the burst):
  of the taverna processes together, of the stub model process, and of this client.
  Unlike the times above it hardly depends on what else the machine runs.

`--rounds N` repeats the burst (each chat sends again), so memory growth between the
first and the last burst shows. Prints a table, then one line of JSON; the machine's load
average is printed beside the figures.

`--workers N` runs N `taverna serve` processes over one PostgreSQL database (a schema
of its own in `$TAVERNA_TEST_DATABASE_URL`, dropped afterwards) and one Redis
(`--redis`, default `$TAVERNA_TEST_REDIS_URL` or redis://127.0.0.1:6379/0), the client
spreading the chats over them: each chat sends to one worker and follows its events on
the next, so every stream crosses processes through Redis.

`--soak MINUTES` then runs mixed traffic for that long over `--soak-chats` chats at once
(default 20; each chat in turn sends, swipes, edits a message, imports and deletes a
small lorebook, and previews its next prompt) and reports the errors, each action's
p50/p99 time and every worker's resident memory at the start and the end of the soak.

    python bench/load.py [--chats 200] [--rounds 2] [--first-delay 0.2]
    python bench/load.py --workers 2 --chats 200 --rounds 2
    python bench/load.py --workers 2 --chats 20 --rounds 1 --soak 30
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
import uuid
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.stubs.taverna_server import TavernaServer  # noqa: E402

TARGET_P99_ADDED_MS = 250.0
SOAK_RSS_GROWTH_PCT = 10.0
# A first start migrates a new database and seeds it: on a busy machine, over a minute.
START_TIMEOUT = 300.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far, all its threads (/proc/PID/stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # after the command name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
    post: httpx.AsyncClient,
    follow: httpx.AsyncClient,
    chat_id: str,
    revision: int,
    text: str,
    expected: str | None,
    kind: str = "normal",
) -> dict[str, Any]:
    """`a_turn`, a failed request counted as an error rather than ending the run."""
    try:
        return await a_turn(post, follow, chat_id, revision, text, expected, kind)
    except httpx.HTTPError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


async def a_turn(
    post: httpx.AsyncClient,
    follow: httpx.AsyncClient,
    chat_id: str,
    revision: int,
    text: str,
    expected: str | None,
    kind: str = "normal",
) -> dict[str, Any]:
    """Send one message (or a swipe) on `post` and follow its events to the end on
    `follow` (another worker, when there are several); times in seconds."""
    began = time.perf_counter()
    body: dict[str, Any] = {"kind": kind, "revision": revision}
    if kind == "normal":
        body["text"] = text
    response = await post.post(f"/api/chats/{chat_id}/generate", json=body)
    posted = time.perf_counter() - began
    if response.status_code != 202:
        return {"error": f"generate answered {response.status_code}: {response.text[:200]}"}
    task = response.json()["task"]["id"]
    first: float | None = None
    event = ""
    outcome: dict[str, Any] = {}
    async with follow.stream("GET", f"/api/tasks/{task}/events") as stream:
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
    if expected is not None and outcome.get("text") != expected:
        return {"error": f"saved {outcome.get('text')!r}, the stub sent {expected!r}"}
    if first is None:
        return {"error": "no text event before the end"}
    return {"first": first, "posted": posted, "whole": time.perf_counter() - began}


def clients(urls: list[str], streams: int) -> list[httpx.AsyncClient]:
    limits = httpx.Limits(max_connections=streams * 2 + 10, max_keepalive_connections=0)
    return [httpx.AsyncClient(base_url=url, timeout=300, limits=limits) for url in urls]


async def burst(
    urls: list[str], chats: dict[str, int], text: str, expected: str
) -> list[dict[str, Any]]:
    """Every chat sends at once, each over a connection of its own; chat i sends to
    worker i and follows on worker i + 1 (the same one when there is one)."""
    pool = clients(urls, len(chats))
    try:
        n = len(pool)
        return await asyncio.gather(
            *(
                one_turn(pool[i % n], pool[(i + 1) % n], chat, rev, text, expected)
                for i, (chat, rev) in enumerate(chats.items())
            )
        )
    finally:
        for client in pool:
            await client.aclose()


def revisions(client: httpx.Client) -> dict[str, int]:
    return {c["id"]: int(c["revision"]) for c in client.get("/api/chats").json()}


# ------------------------------------------------------------------ the soak


LOREBOOK = {
    "entries": {
        "0": {"uid": 0, "key": ["lantern"], "content": "The lantern never goes out.", "order": 100}
    }
}


async def soak_chat(
    pool: list[httpx.AsyncClient],
    slot: int,
    chat_id: str,
    deadline: float,
    timings: dict[str, list[float]],
    errors: list[str],
) -> None:
    """One chat's mixed traffic until `deadline`: send, swipe, edit, import, preview."""
    n = len(pool)
    turn = 0
    while time.monotonic() < deadline:
        post, follow = pool[(slot + turn) % n], pool[(slot + turn + 1) % n]
        action = ("send", "swipe", "edit", "import", "preview")[turn % 5]
        turn += 1
        began = time.perf_counter()
        try:
            view = (await follow.get(f"/api/chats/{chat_id}")).raise_for_status().json()
            revision = int(view["revision"])
            if action in ("send", "swipe"):
                can_swipe = (
                    len(view["messages"]) > 1 and view["messages"][-1]["role"] == "assistant"
                )
                kind = "swipe" if action == "swipe" and can_swipe else "normal"
                found = await one_turn(post, follow, chat_id, revision, f"soak {turn}", None, kind)
                if "error" in found:
                    errors.append(f"{action}: {found['error']}")
                    continue
            elif action == "edit":
                mine = [m for m in view["messages"] if m["role"] == "user"]
                if mine:
                    answer = await post.patch(
                        f"/api/chats/{chat_id}/messages/{mine[-1]['id']}",
                        json={"content": f"edited {turn}", "revision": revision},
                    )
                    answer.raise_for_status()
            elif action == "import":
                name = f"soak-{chat_id[-8:]}-{turn}.json"
                data = json.dumps(LOREBOOK).encode()
                made = await post.post(
                    "/api/lorebooks/import", files={"file": (name, data, "application/json")}
                )
                made.raise_for_status()
                (await follow.delete(f"/api/lorebooks/{made.json()['id']}")).raise_for_status()
            else:
                (await post.get(f"/api/chats/{chat_id}/prompt")).raise_for_status()
        except httpx.HTTPError as exc:
            detail = getattr(getattr(exc, "response", None), "text", "")[:200]
            errors.append(f"{action}: {type(exc).__name__}: {exc} {detail}")
            continue
        timings.setdefault(action, []).append(time.perf_counter() - began)


async def soak(urls: list[str], chats: list[str], minutes: float) -> dict[str, Any]:
    pool = clients(urls, len(chats))
    timings: dict[str, list[float]] = {}
    errors: list[str] = []
    deadline = time.monotonic() + minutes * 60
    try:
        await asyncio.gather(
            *(soak_chat(pool, i, c, deadline, timings, errors) for i, c in enumerate(chats))
        )
    finally:
        for client in pool:
            await client.aclose()
    return {"timings": timings, "errors": errors}


# ------------------------------------------------------------------ the deployment


class Deployment:
    """The stub model and `workers` taverna processes (one: SQLite in the data folder;
    several: PostgreSQL in a schema of their own, and Redis)."""

    def __init__(self, folder: Path, workers: int, redis_url: str) -> None:
        self.schema = ""
        self.database_url = ""
        env: dict[str, str] = {}
        args: tuple[str, ...] = ()
        if workers > 1:
            base = os.environ.get("TAVERNA_TEST_DATABASE_URL", "")
            if not base.startswith("postgresql"):
                raise SystemExit("--workers > 1 needs TAVERNA_TEST_DATABASE_URL (PostgreSQL)")
            import sqlalchemy as sa

            self.database_url = base
            self.schema = f"load_{uuid.uuid4().hex[:12]}"
            engine = sa.create_engine(base)
            with engine.begin() as conn:
                conn.exec_driver_sql(f'CREATE SCHEMA "{self.schema}"')
            engine.dispose()
            joiner = "&" if "?" in base else "?"
            env["TAVERNA_DATABASE_URL"] = f"{base}{joiner}options=-csearch_path%3D{self.schema}"
            args = ("--redis", redis_url)
        self.stub = StubProcess()
        self.servers: list[TavernaServer] = []
        try:
            for i in range(workers):  # one after the other: the first seeds the library
                server = TavernaServer(
                    folder / "data",
                    folder / f"serve-{i}.log",
                    args=args,
                    env=env,
                    start_timeout=START_TIMEOUT,
                )
                self.servers.append(server.start())
        except BaseException:
            self.close()
            raise

    @property
    def urls(self) -> list[str]:
        return [s.url for s in self.servers]

    def memory(self) -> list[tuple[float, float]]:
        return [s.memory_mb() for s in self.servers]

    def cpu(self) -> tuple[list[float], float, float]:
        """CPU seconds so far: each worker's, the stub model's, and this client's."""
        workers = [cpu_seconds(s.process.pid) for s in self.servers if s.process is not None]
        return workers, cpu_seconds(self.stub.process.pid), cpu_seconds(os.getpid())

    def log_tails(self, lines: int = 40) -> str:
        """The end of every worker's log (printed when a run had errors)."""
        return "\n".join(
            f"--- {s.log.name}\n"
            + "\n".join(s.log.read_text(errors="replace").splitlines()[-lines:])
            for s in self.servers
        )

    def close(self) -> None:
        for server in self.servers:
            server.stop()
        self.stub.close()
        if self.schema:
            import sqlalchemy as sa

            engine = sa.create_engine(self.database_url)
            with engine.begin() as conn:
                conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')
            engine.dispose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chats", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=20)
    parser.add_argument("--first-delay", type=float, default=0.2)
    parser.add_argument("--gap", type=float, default=0.02)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--redis",
        default=os.environ.get("TAVERNA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"),
    )
    parser.add_argument("--soak", type=float, default=0.0, metavar="MINUTES")
    parser.add_argument(
        "--soak-chats", type=int, default=20, help="chats busy at once during the soak"
    )
    args = parser.parse_args()

    tokens = [f" word{i}" for i in range(args.tokens)]
    expected = "".join(tokens).strip()
    soaked: dict[str, Any] | None = None
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        deployment = Deployment(Path(tmp), args.workers, args.redis)
        stub = deployment.stub
        urls = deployment.urls
        try:
            with httpx.Client(base_url=urls[0], timeout=60) as client:
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
                ours = [
                    client.post(
                        "/api/chats", json={"character_id": character, "title": f"load {i}"}
                    )
                    .raise_for_status()
                    .json()["id"]
                    for i in range(args.chats)
                ]
                memory: list[list[tuple[float, float]]] = []
                for round_number in range(args.rounds):
                    current = revisions(client)
                    chats = {c: current[c] for c in ours}
                    stub.script(len(chats), tokens, args.first_delay, args.gap)
                    cpu_before = deployment.cpu()
                    began = time.perf_counter()
                    found = asyncio.run(burst(urls, chats, f"turn {round_number}", expected))
                    elapsed = time.perf_counter() - began
                    cpu_after = deployment.cpu()
                    memory.append(deployment.memory())
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
                            "cpu_workers": [
                                b - a for a, b in zip(cpu_before[0], cpu_after[0], strict=True)
                            ],
                            "cpu_stub": cpu_after[1] - cpu_before[1],
                            "cpu_client": cpu_after[2] - cpu_before[2],
                        }
                    )
                if args.soak > 0:
                    # nothing scripted: the stub answers each soak request with its
                    # default short reply
                    before = deployment.memory()
                    soaked = asyncio.run(soak(urls, ours[: args.soak_chats], args.soak))
                    soaked["rss_start"] = [round(r, 1) for r, _ in before]
                    soaked["rss_end"] = [round(r, 1) for r, _ in deployment.memory()]
        finally:
            if any(r["errors"] for r in results) or (soaked and soaked["errors"]):
                print(deployment.log_tails(), file=sys.stderr)
            deployment.close()

    load = os.getloadavg()
    where = (
        "one `taverna serve`"
        if args.workers == 1
        else f"{args.workers} `taverna serve` workers (PostgreSQL, Redis; each chat followed"
        " on another worker than it sent to)"
    )
    print(
        f"{args.chats} chats streaming at once through {where}, {args.rounds} bursts;"
        f" stub: first token after {args.first_delay * 1000:.0f} ms, {args.tokens} tokens"
        f" {args.gap * 1000:.0f} ms apart; load average {load[0]:.2f} {load[1]:.2f}"
        f" {load[2]:.2f} on {os.cpu_count()} CPUs"
    )
    print(
        f"{'burst':>5}  {'errors':>6}  {'TTFT p50':>9}  {'TTFT p99':>9}  {'added p50':>9}"
        f"  {'added p99':>9}  {'POST p50':>8}  {'POST p99':>8}  {'RSS MB':>14}  {'seconds':>7}"
        f"  {'CPU ms/turn: taverna':>20}  {'stub':>5}  {'client':>6}"
    )
    figures: dict[str, Any] = {
        "load_average": load[0],
        "cpus": os.cpu_count(),
        "workers": args.workers,
        "bursts": [],
    }
    for i, (result, rss) in enumerate(zip(results, memory, strict=True)):
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
            "rss_mb": [round(r, 1) for r, _ in rss],
            "peak_mb": [round(p, 1) for _, p in rss],
            "seconds": round(result["seconds"], 2),
            # CPU per turn: every worker's together (and each one's), the stub's, the client's
            "cpu_ms_per_turn": round(sum(result["cpu_workers"]) * 1000 / result["chats"], 2),
            "cpu_ms_per_turn_workers": [
                round(c * 1000 / result["chats"], 2) for c in result["cpu_workers"]
            ],
            "stub_cpu_ms_per_turn": round(result["cpu_stub"] * 1000 / result["chats"], 2),
            "client_cpu_ms_per_turn": round(result["cpu_client"] * 1000 / result["chats"], 2),
        }
        figures["bursts"].append(row)
        shown = "/".join(f"{r:.0f}" for r in row["rss_mb"])
        print(
            f"{i + 1:>5}  {row['errors']:>6}  {row['ttft_p50_ms']:>9.1f}  {row['ttft_p99_ms']:>9.1f}"
            f"  {row['added_p50_ms']:>9.1f}  {row['added_p99_ms']:>9.1f}  {row['post_p50_ms']:>8.1f}"
            f"  {row['post_p99_ms']:>8.1f}  {shown:>14}  {row['seconds']:>7.2f}"
            f"  {row['cpu_ms_per_turn']:>20.1f}  {row['stub_cpu_ms_per_turn']:>5.1f}"
            f"  {row['client_cpu_ms_per_turn']:>6.1f}"
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
    if soaked is not None:
        shown = min(args.soak_chats, args.chats)
        print(f"soak: {args.soak:g} min of mixed traffic over {shown} chats at once")
        for action, times in sorted(soaked["timings"].items()):
            ms = [t * 1000 for t in times]
            print(
                f"  {action:>8}: {len(ms):>6} done, p50 {percentile(ms, 50):8.1f} ms,"
                f" p99 {percentile(ms, 99):8.1f} ms"
            )
        growth = [
            (end - start) / start * 100
            for start, end in zip(soaked["rss_start"], soaked["rss_end"], strict=True)
        ]
        flat = all(abs(g) <= SOAK_RSS_GROWTH_PCT for g in growth)
        print(
            f"  errors: {len(soaked['errors'])}"
            + (f" (first: {soaked['errors'][0]})" if soaked["errors"] else "")
        )
        print(
            "  RSS MB per worker, start -> end: "
            + ", ".join(
                f"{a:.0f} -> {b:.0f} ({g:+.1f}%)"
                for a, b, g in zip(soaked["rss_start"], soaked["rss_end"], growth, strict=True)
            )
            + f" (target within {SOAK_RSS_GROWTH_PCT:.0f}%):"
            + (" PASS" if flat and not soaked["errors"] else " MISS")
        )
        figures["soak"] = {
            "minutes": args.soak,
            "errors": len(soaked["errors"]),
            "first_error": soaked["errors"][0] if soaked["errors"] else None,
            "done": {k: len(v) for k, v in soaked["timings"].items()},
            "rss_start_mb": soaked["rss_start"],
            "rss_end_mb": soaked["rss_end"],
            "load_average_after": os.getloadavg()[0],
        }
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
