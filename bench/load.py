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
p50/p99 time and every worker's resident memory at the start and the end of the soak,
with a sample every minute between (its anonymous and file-backed parts too) to tell a
warm-up that levels off from a steady leak. A soak's chats grow all the while, and with
them what each turn reads and keeps (the messages its prompt holds, until the context is
full): the report gives the chat messages the previews' prompts held in the first and the
last minute, and how many of the last minute's the context cut. `--soak-long N` starts
each soak chat instead as an imported SillyTavern chat of N messages like the soak's own
(default 0: new chats), so every prompt is cut by the context from the first turn and what
a turn keeps stays the same size; each is read once by every worker before the memory at
the start is taken. Then RSS growth is what stays behind.
`--soak-warm MINUTES` runs the same traffic for that long first and takes the start figure
after it, so what a worker sets up once (a first backup of each chat, the first lorebook
import, its connections) is not counted as growth; the growth from before the warm-up is
printed too.

`--steady SECONDS` replaces the bursts with steady traffic, the figure of real use: every
chat loops for SECONDS (reads its chat, sends, follows its stream to the end, sends again
after `--think` seconds, default 0), and the stub answers every request with a reply of
realistic length and pace (defaults for steady: `--tokens 200 --gap 0.05`, 10 s at 20
tokens a second, after the 0.2 s first delay). The chats' first sends are spread evenly
over one reply's duration, so their streams overlap as they would in real use rather than
starting and ending together. The first reply's duration is ramp-up; from then until the
end the run measures: errors; TTFT added p50/p99 over every turn begun in that window;
the streams open at once, sampled by the client every 100 ms (min / p50 / max), which
shows how many chats really streamed together; CPU per turn (CPU of the window over the
turns that ended in it: in steady traffic turns end at the rate their work is done) and
per token (that over the reply's tokens) of the taverna workers, the stub and the client;
each worker's RSS at the end. The same 250 ms bound gives PASS or MISS. The steady
client reads with aiohttp, at about a third of httpx's CPU per event: on one machine the
client's CPU is taken from the workers it measures, where a person's browser is elsewhere.

The workers record what their turns cost (`TAVERNA_COST_PROBE`, taverna/server/cost_probe.py;
`--no-probe` leaves it off): beside the CPU per turn the run prints the SQL statements and
transactions per turn and the share of the workers' CPU in each part of a turn (read, build,
write, relay, backup, and `serve` / `loop` / `other` for the rest), sampled every 10 ms by
thread CPU; the sampler's own CPU is printed and left out of the CPU target. `--busy-core`
keeps one core busy with a pinned Python loop beside the traffic (its measured share of a
core is printed); `--burst N` sends N messages at one instant (after a steady run, once;
in the burst mode, the chats of each burst); `--recall` turns recall by meaning on; `--rest`
waits before the RSS at rest; `--turn` runs bench/turn.py (or `--turn-json FILE` reads its
output) for the candidate switch and time to request targets. Last, every target of the
issue "a turn costs what its work costs" is printed with its figure and PASS, MISS or n/a
(saying what to run for it), with the load average, and added to the JSON line.

Quick run (about two minutes on two cores): `--steady 40 --chats 50 --burst 50 --busy-core
--recall --rest 3`. Full run of the targets (PostgreSQL, Redis), and the soak of new chats:

    python bench/load.py --workers 2 --chats 200 --steady 120 --burst 200 --busy-core --recall --turn
    python bench/load.py --workers 2 --chats 20 --rounds 1 --soak 40

    python bench/load.py [--chats 200] [--rounds 2] [--first-delay 0.2]
    python bench/load.py --workers 2 --chats 200 --rounds 2
    python bench/load.py --workers 2 --chats 20 --rounds 1 --soak 30
    python bench/load.py --workers 2 --chats 20 --rounds 1 --soak 30 --soak-long 1000 --soak-warm 2
    python bench/load.py --workers 2 --chats 200 --steady 60
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

import aiohttp
import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import _costs  # noqa: E402  (bench/_costs.py, beside this script)
from _costs import cpu_seconds  # noqa: E402

from tests.stubs.taverna_server import TavernaServer  # noqa: E402

TARGET_P99_ADDED_MS = _costs.TARGET_STEADY_P99_MS
SOAK_RSS_GROWTH_PCT = _costs.TARGET_SOAK_GROWTH_PCT
# A first start migrates a new database and seeds it: on a busy machine, over a minute.
START_TIMEOUT = 300.0


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

    def default(self, tokens: list[str], first_delay: float, gap: float) -> None:
        """Answer every request not scripted with this reply, without keeping the requests."""
        reply = {"tokens": tokens, "first_delay": first_delay, "delay": gap, "record": False}
        self.control.post("/_stub/default", json=reply).raise_for_status()

    def problems(self) -> list[str]:
        """The schema problems the stub saw in taverna's requests."""
        state = self.control.get("/_stub/state").raise_for_status().json()
        return list(state["problems"])

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
    windows: list[tuple[float, int, bool]],
) -> None:
    """One chat's mixed traffic until `deadline`: send, swipe, edit, import, preview. Each
    preview notes in `windows` its time, the chat's messages in the prompt, and whether
    the context cut older ones."""
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
                shown = (await post.get(f"/api/chats/{chat_id}/prompt")).raise_for_status().json()
                cut = shown["first_message_in_context"] is not None
                windows.append((time.monotonic(), len(shown["included_message_ids"]), cut))
        except httpx.HTTPError as exc:
            detail = getattr(getattr(exc, "response", None), "text", "")[:200]
            errors.append(f"{action}: {type(exc).__name__}: {exc} {detail}")
            continue
        timings.setdefault(action, []).append(time.perf_counter() - began)


def rss_parts(pid: int) -> dict[str, float]:
    """A process's resident memory in MB: all of it, and its anonymous (heap) and
    file-backed (mapped files, such as a memory-mapped database) parts."""
    values: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
            values[name] = int(rest.split()[0]) / 1024
    return values


async def rss_curve(
    deployment: Deployment, deadline: float, curve: list[list[dict[str, float]]]
) -> None:
    """Every worker's memory once a minute until `deadline` (time.monotonic())."""
    while True:
        await asyncio.sleep(min(60.0, max(0.0, deadline - time.monotonic())))
        if time.monotonic() >= deadline:
            return
        curve.append(
            [rss_parts(s.process.pid) for s in deployment.servers if s.process is not None]
        )


def long_chat(messages: int, character: str, label: str) -> bytes:
    """A SillyTavern chat file of `messages` lines as short as the soak's own."""
    lines = [{"user_name": "User", "character_name": character, "chat_metadata": {}}]
    for i in range(messages):
        mine = i % 2 == 0
        lines.append(
            {
                "name": "User" if mine else character,
                "is_user": mine,
                "send_date": "2026-01-01T00:00:00.000Z",
                "mes": f"{label} {i}" if mine else "Hello, traveller.",
            }
        )
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def long_chats(deployment: Deployment, character: str, count: int, messages: int) -> list[str]:
    """`count` imported chats of `messages` lines, each read once by every worker (its
    prompt previewed), so the soak starts from their kept windows."""
    made = []
    with httpx.Client(base_url=deployment.urls[0], timeout=300) as client:
        name = client.get(f"/api/characters/{character}").raise_for_status().json()["name"]
        for i in range(count):
            data = long_chat(messages, name, f"long {i}")
            answer = client.post(
                "/api/chats/import",
                files={"file": (f"long-{i}.jsonl", data, "application/jsonl")},
                data={"character_id": character},
            )
            made.append(answer.raise_for_status().json()["id"])
    for url in deployment.urls:
        with httpx.Client(base_url=url, timeout=300) as client:
            for chat_id in made:
                client.get(f"/api/chats/{chat_id}/prompt").raise_for_status()
    return made


async def soak(deployment: Deployment, chats: list[str], minutes: float) -> dict[str, Any]:
    pool = clients(deployment.urls, len(chats))
    timings: dict[str, list[float]] = {}
    errors: list[str] = []
    curve: list[list[dict[str, float]]] = []
    windows: list[tuple[float, int, bool]] = []
    began = time.monotonic()
    deadline = began + minutes * 60
    try:
        await asyncio.gather(
            rss_curve(deployment, deadline, curve),
            *(
                soak_chat(pool, i, c, deadline, timings, errors, windows)
                for i, c in enumerate(chats)
            ),
        )
    finally:
        for client in pool:
            await client.aclose()
    return {
        "timings": timings,
        "errors": errors,
        "curve": curve,
        "windows": [(at - began, size, cut) for at, size, cut in windows],
    }


def window_growth(windows: list[tuple[float, int, bool]]) -> dict[str, float] | None:
    """The chat messages a prompt held in the soak's first and last minute (median of the
    previews), and the share of the last minute's prompts the context cut."""
    if not windows:
        return None
    end = max(at for at, _, _ in windows)
    first = [size for at, size, _ in windows if at < 60]
    last = [(size, cut) for at, size, cut in windows if at >= end - 60]
    if not first or not last:
        return None
    return {
        "first_minute_p50": statistics.median(first),
        "last_minute_p50": statistics.median(size for size, _ in last),
        "last_minute_cut_pct": round(100 * sum(cut for _, cut in last) / len(last), 1),
    }


# ------------------------------------------------------------------ steady traffic


class Streams:
    """How many event streams are open at this moment, sampled by `sample`."""

    def __init__(self) -> None:
        self.open = 0
        self.samples: list[tuple[float, int]] = []

    async def sample(self, until: float, every: float = 0.1) -> None:
        while time.perf_counter() < until:
            self.samples.append((time.perf_counter(), self.open))
            await asyncio.sleep(every)


async def steady_turn(
    post: aiohttp.ClientSession,
    follow: aiohttp.ClientSession,
    chat_id: str,
    text: str,
    expected: str,
    streams: Streams,
) -> dict[str, Any]:
    """Read the chat (its revision, as a page does after a reply), send one message and
    follow its events to the end; times from the send, in `time.perf_counter()` seconds."""
    try:
        async with follow.get(f"/api/chats/{chat_id}") as got:
            got.raise_for_status()
            view = await got.json()
        began = time.perf_counter()
        body = {"kind": "normal", "text": text, "revision": int(view["revision"])}
        async with post.post(f"/api/chats/{chat_id}/generate", json=body) as response:
            posted = time.perf_counter() - began
            if response.status != 202:
                return {"began": began, "error": f"generate answered {response.status}"}
            task = (await response.json())["task"]["id"]
        first: float | None = None
        event = ""
        outcome: dict[str, Any] = {}
        async with follow.get(f"/api/tasks/{task}/events") as stream:
            streams.open += 1
            try:
                async for raw in stream.content:
                    line = raw.decode().rstrip("\r\n")
                    if line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("data: "):
                        if event == "delta" and first is None:
                            first = time.perf_counter()
                        if event in ("done", "error", "cancelled"):
                            outcome = {"event": event, **json.loads(line[6:])}
                            break
            finally:
                streams.open -= 1
    except (aiohttp.ClientError, TimeoutError) as exc:
        return {"began": time.perf_counter(), "error": f"{type(exc).__name__}: {exc}"}
    ended = time.perf_counter()
    if outcome.get("event") != "done":
        return {"began": began, "error": f"the generation ended with {outcome or 'no end event'}"}
    if outcome.get("text") != expected:
        return {"began": began, "error": f"saved {outcome.get('text')!r}, not {expected!r}"}
    if first is None:
        return {"began": began, "error": "no text event before the end"}
    return {"began": began, "first": first - began, "posted": posted, "ended": ended}


async def steady_chat(
    post: aiohttp.ClientSession,
    follow: aiohttp.ClientSession,
    chat_id: str,
    start: float,
    deadline: float,
    think: float,
    expected: str,
    streams: Streams,
    turns: list[dict[str, Any]],
) -> None:
    """One chat from `start` until `deadline`: send, follow to the end, think, send again."""
    await asyncio.sleep(max(0.0, start - time.perf_counter()))
    n = 0
    while time.perf_counter() < deadline:
        n += 1
        turns.append(await steady_turn(post, follow, chat_id, f"steady {n}", expected, streams))
        if think:
            await asyncio.sleep(think)


async def steady(
    deployment: Deployment,
    chats: list[str],
    seconds: float,
    ramp: float,
    think: float,
    expected: str,
) -> dict[str, Any]:
    """Every chat loops for `seconds`, the first sends spread evenly over `ramp` (one
    reply's duration); CPU, memory and the streams open are measured from `ramp` on."""
    # aiohttp reads the streams at a third of httpx's CPU: on one machine the client's
    # CPU is taken from the workers it measures (browsers run elsewhere)
    pool = [
        aiohttp.ClientSession(
            base_url=url,
            timeout=aiohttp.ClientTimeout(total=300),
            connector=aiohttp.TCPConnector(limit=0),
        )
        for url in deployment.urls
    ]
    streams = Streams()
    turns: list[dict[str, Any]] = []
    n = len(pool)
    began = time.perf_counter()
    window = began + ramp
    deadline = began + seconds
    marks: dict[str, Any] = {}

    async def measure() -> None:
        await asyncio.sleep(max(0.0, window - time.perf_counter()))
        marks["cpu_start"] = deployment.cpu()
        marks["costs_start"] = deployment.costs()
        await asyncio.sleep(max(0.0, deadline - time.perf_counter()))
        marks["cpu_end"] = deployment.cpu()
        marks["costs_end"] = deployment.costs()
        marks["memory"] = deployment.memory()

    try:
        await asyncio.gather(
            streams.sample(deadline),
            measure(),
            *(
                steady_chat(
                    pool[i % n],
                    pool[(i + 1) % n],
                    chat,
                    began + ramp * i / len(chats),
                    deadline,
                    think,
                    expected,
                    streams,
                    turns,
                )
                for i, chat in enumerate(chats)
            ),
        )
    finally:
        for client in pool:
            await client.close()
    return {
        "turns": turns,
        "window": (window, deadline),
        "open": [count for at, count in streams.samples if at >= window],
        **marks,
    }


def report_steady(
    args: argparse.Namespace, found: dict[str, Any], problems: list[str]
) -> dict[str, Any]:
    """Print the steady run's table; its figures for the JSON line."""
    start, end = found["window"]
    turns = found["turns"]
    inside = [t for t in turns if start <= t["began"] < end]
    errors = [t["error"] for t in inside if "error" in t]
    errors_all = [t["error"] for t in turns if "error" in t]
    added = [(t["first"] - args.first_delay) * 1000 for t in inside if "first" in t] or [
        float("nan")
    ]
    posted = [t["posted"] * 1000 for t in inside if "posted" in t] or [float("nan")]
    # turns ended in the window: in steady traffic the rate at which turns complete is
    # the rate at which their work is done, so CPU in the window / turns ended in it
    ended = sum(1 for t in turns if "ended" in t and start <= t["ended"] < end)
    workers_a, stub_a, client_a = found["cpu_start"]
    workers_b, stub_b, client_b = found["cpu_end"]
    cpu_workers = [b - a for a, b in zip(workers_a, workers_b, strict=True)]
    per_turn = sum(cpu_workers) * 1000 / max(ended, 1)
    open_now = found["open"] or [0]
    load = os.getloadavg()
    reply = args.first_delay + args.tokens * args.gap
    row = {
        "mode": "steady",
        "load_average": load[0],
        "cpus": os.cpu_count(),
        "workers": args.workers,
        "chats": args.chats,
        "seconds": args.steady,
        "window_seconds": round(end - start, 1),
        "reply_seconds": round(reply, 2),
        "think_seconds": args.think,
        "turns_begun": len(inside),
        "turns_ended": ended,
        "errors": len(errors),
        "errors_whole_run": len(errors_all),
        "first_error": errors_all[0] if errors_all else None,
        "stub_problems": len(problems),
        "added_p50_ms": round(percentile(added, 50), 1),
        "added_p99_ms": round(percentile(added, 99), 1),
        "post_p50_ms": round(percentile(posted, 50), 1),
        "post_p99_ms": round(percentile(posted, 99), 1),
        "open_min": min(open_now),
        "open_p50": percentile([float(o) for o in open_now], 50),
        "open_max": max(open_now),
        "cpu_ms_per_turn": round(per_turn, 2),
        "cpu_ms_per_turn_workers": [round(c * 1000 / max(ended, 1), 2) for c in cpu_workers],
        "cpu_ms_per_token": round(per_turn / args.tokens, 3),
        "stub_cpu_ms_per_turn": round((stub_b - stub_a) * 1000 / max(ended, 1), 2),
        "client_cpu_ms_per_turn": round((client_b - client_a) * 1000 / max(ended, 1), 2),
        "rss_mb": [round(r, 1) for r, _ in found["memory"]],
        "peak_mb": [round(p, 1) for _, p in found["memory"]],
        "costs": _costs.turn_costs(found["costs_start"], found["costs_end"], ended),
    }
    row["cpu_ms_per_turn_less_sampler"] = round(per_turn - row["costs"]["probe_cpu_ms_per_turn"], 2)
    where = "one `taverna serve`" if args.workers == 1 else f"{args.workers} workers"
    print(
        f"steady: {args.chats} chats through {where} for {args.steady:g} s, each sending again"
        f" {args.think:g} s after its reply ended; stub: first token after"
        f" {args.first_delay * 1000:.0f} ms, {args.tokens} tokens {args.gap * 1000:.0f} ms"
        f" apart ({reply:.1f} s a reply); measured over the last {end - start:.1f} s (after"
        f" one reply's ramp-up); load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
        f" on {os.cpu_count()} CPUs"
    )
    lines = [
        ("turns begun / ended in the window", f"{row['turns_begun']} / {row['turns_ended']}"),
        (
            "errors (window / whole run)",
            f"{row['errors']} / {row['errors_whole_run']}"
            + (f"; stub schema problems {len(problems)}" if problems else ""),
        ),
        ("TTFT added p50 / p99 ms", f"{row['added_p50_ms']:.1f} / {row['added_p99_ms']:.1f}"),
        ("POST generate p50 / p99 ms", f"{row['post_p50_ms']:.1f} / {row['post_p99_ms']:.1f}"),
        (
            "streams open min / p50 / max",
            f"{row['open_min']} / {row['open_p50']:.0f} / {row['open_max']}"
            f" (sampled every 100 ms, {len(open_now)} samples)",
        ),
        (
            "CPU ms per turn: taverna",
            f"{row['cpu_ms_per_turn']:.1f}"
            + (
                " (" + " + ".join(f"{c:.1f}" for c in row["cpu_ms_per_turn_workers"]) + ")"
                if args.workers > 1
                else ""
            ),
        ),
        ("CPU ms per token: taverna", f"{row['cpu_ms_per_token']:.3f}"),
        (
            "CPU ms per turn: stub / client",
            f"{row['stub_cpu_ms_per_turn']:.1f} / {row['client_cpu_ms_per_turn']:.1f}",
        ),
        (
            "RSS / peak MB per worker",
            ", ".join(
                f"{r:.0f} / {p:.0f}" for r, p in zip(row["rss_mb"], row["peak_mb"], strict=True)
            ),
        ),
        *_costs.cost_lines(row["costs"], per_turn),
    ]
    for name, value in lines:
        print(f"  {name:<34} {value}")
    if row["first_error"]:
        print(f"  first error: {row['first_error']}")
    ok = row["added_p99_ms"] <= TARGET_P99_ADDED_MS and not errors_all and not problems
    print(
        f"time to first token added by taverna, p99: {row['added_p99_ms']:.1f} ms"
        f" (target {TARGET_P99_ADDED_MS:.0f} ms, errors 0): {'PASS' if ok else 'MISS'}"
    )
    return row


# ------------------------------------------------------------------ the deployment


class Deployment:
    """The stub model and `workers` taverna processes (one: SQLite in the data folder;
    several: PostgreSQL in a schema of their own, and Redis)."""

    def __init__(self, folder: Path, workers: int, redis_url: str, probe: bool = True) -> None:
        self.schema = ""
        self.database_url = ""
        env: dict[str, str] = {}
        # each worker records its statements, transactions and profile here (bench/_costs.py)
        self.probe = folder / "probe" if probe else None
        if self.probe is not None:
            env["TAVERNA_COST_PROBE"] = str(self.probe)
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

    def costs(self) -> list[dict[str, Any]]:
        """Each worker's running totals of statements, transactions and sampled CPU by part
        (empty without the probe), and its ended children's CPU (its backup processes)."""
        pids = [s.process.pid for s in self.servers if s.process is not None]
        return _costs.read_probe(self.probe, pids)

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


def a_round(
    deployment: Deployment,
    client: httpx.Client,
    chat_ids: list[str],
    round_number: int,
    tokens: list[str],
    args: argparse.Namespace,
) -> dict[str, Any]:
    """One burst of the burst mode: every chat of `chat_ids` sends at once; its times, CPU
    and (from the workers' probe) statements, transactions and profile."""
    current = revisions(client)
    chats = {c: current[c] for c in chat_ids}
    deployment.stub.script(len(chats), tokens, args.first_delay, args.gap)
    costs_before = deployment.costs()
    cpu_before = deployment.cpu()
    began = time.perf_counter()
    expected = "".join(tokens).strip()
    found = asyncio.run(burst(deployment.urls, chats, f"turn {round_number}", expected))
    elapsed = time.perf_counter() - began
    cpu_after = deployment.cpu()
    time.sleep(_costs.PROBE_REFRESH)
    errors = [r["error"] for r in found if "error" in r]
    ok = [r for r in found if "error" not in r]
    return {
        "chats": len(chats),
        "seconds": elapsed,
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "first": [r["first"] for r in ok],
        "posted": [r["posted"] for r in ok],
        "cpu_workers": [b - a for a, b in zip(cpu_before[0], cpu_after[0], strict=True)],
        "cpu_stub": cpu_after[1] - cpu_before[1],
        "cpu_client": cpu_after[2] - cpu_before[2],
        "costs": _costs.turn_costs(costs_before, deployment.costs(), len(chats)),
    }


def run_soak(
    deployment: Deployment, ours: list[str], character: str, args: argparse.Namespace
) -> dict[str, Any]:
    """The soak (after its warm-up, if any), with every worker's memory along it."""
    # nothing scripted: the stub answers each soak request with its default short reply
    soaking = ours[: args.soak_chats]
    if args.soak_long:
        soaking = long_chats(deployment, character, len(soaking), args.soak_long)
    cold = [round(r, 1) for r, _ in deployment.memory()]
    warmed: dict[str, Any] | None = None
    if args.soak_warm > 0:
        warmed = asyncio.run(soak(deployment, soaking, args.soak_warm))
    before = deployment.memory()
    parts = [rss_parts(s.process.pid) for s in deployment.servers if s.process is not None]
    soaked = asyncio.run(soak(deployment, soaking, args.soak))
    ending = [rss_parts(s.process.pid) for s in deployment.servers if s.process is not None]
    soaked["curve"] = [parts, *soaked["curve"], ending]
    soaked["rss_start"] = [round(r, 1) for r, _ in before]
    soaked["rss_cold"] = cold
    if warmed is not None:
        soaked["errors"] = warmed["errors"] + soaked["errors"]
    soaked["rss_end"] = [round(r, 1) for r, _ in deployment.memory()]
    return soaked


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chats", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=None, help="20 (steady: 200)")
    parser.add_argument("--first-delay", type=float, default=0.2)
    parser.add_argument("--gap", type=float, default=None, help="0.02 s (steady: 0.05 s)")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--redis",
        default=os.environ.get("TAVERNA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"),
    )
    parser.add_argument("--soak", type=float, default=0.0, metavar="MINUTES")
    parser.add_argument(
        "--soak-chats", type=int, default=20, help="chats busy at once during the soak"
    )
    parser.add_argument(
        "--soak-long",
        type=int,
        default=0,
        metavar="MESSAGES",
        help="soak imported chats of this many messages instead of new ones",
    )
    parser.add_argument(
        "--soak-warm",
        type=float,
        default=0.0,
        metavar="MINUTES",
        help="the soak's traffic for this long before its start figure (default 0)",
    )
    parser.add_argument(
        "--steady",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="steady traffic for SECONDS instead of the bursts",
    )
    parser.add_argument(
        "--think", type=float, default=0.0, help="steady: seconds between a reply and the next send"
    )
    parser.add_argument(
        "--burst",
        type=int,
        default=0,
        metavar="SENDS",
        help="this many chats send at one instant (steady: once, after the steady run;"
        " bursts: the chats of each burst, default --chats)",
    )
    parser.add_argument(
        "--busy-core",
        action="store_true",
        help="a busy loop pinned to one core runs beside the traffic (not the soak)",
    )
    parser.add_argument(
        "--recall", action="store_true", help="recall by meaning on for the chats (through the API)"
    )
    parser.add_argument(
        "--rest",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="wait this long after the traffic before the RSS at rest (default 5)",
    )
    parser.add_argument(
        "--no-probe",
        action="store_true",
        help="the workers record no statements, transactions or profile",
    )
    parser.add_argument(
        "--turn",
        action="store_true",
        help="run bench/turn.py for the candidate switch and time to request targets",
    )
    parser.add_argument(
        "--turn-json",
        type=Path,
        default=None,
        metavar="FILE",
        help="read those two targets' figures from bench/turn.py's output saved in FILE",
    )
    args = parser.parse_args()
    if args.tokens is None:
        args.tokens = 200 if args.steady else 20
    if args.gap is None:
        args.gap = 0.05 if args.steady else 0.02
    reply_seconds = args.first_delay + args.tokens * args.gap
    if args.steady and args.steady <= reply_seconds:
        raise SystemExit(f"--steady must be longer than one reply ({reply_seconds:g} s)")
    return args


def one_burst(
    deployment: Deployment, chat_ids: list[str], expected: str, first_delay: float
) -> dict[str, Any]:
    """Every chat of `chat_ids` sends at one instant and follows its stream to the end."""
    with httpx.Client(base_url=deployment.urls[0], timeout=60) as client:
        current = revisions(client)
    before, cpu_before = deployment.costs(), deployment.cpu()
    began = time.perf_counter()
    chats = {c: current[c] for c in chat_ids}
    found = asyncio.run(burst(deployment.urls, chats, "burst", expected))
    elapsed = time.perf_counter() - began
    cpu_after = deployment.cpu()
    time.sleep(_costs.PROBE_REFRESH)
    errors = [r["error"] for r in found if "error" in r]
    added = [(r["first"] - first_delay) * 1000 for r in found if "first" in r] or [float("nan")]
    posted = [r["posted"] * 1000 for r in found if "posted" in r] or [float("nan")]
    cpu = sum(b - a for a, b in zip(cpu_before[0], cpu_after[0], strict=True))
    return {
        "sends": len(chats),
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "added_p50_ms": round(percentile(added, 50), 1),
        "added_p99_ms": round(percentile(added, 99), 1),
        "post_p99_ms": round(percentile(posted, 99), 1),
        "seconds": round(elapsed, 2),
        "cpu_ms_per_turn": round(cpu * 1000 / len(chats), 2),
        "costs": _costs.turn_costs(before, deployment.costs(), len(chats)),
    }


def report_burst(found: dict[str, Any]) -> None:
    """Print the burst after a steady run."""
    print(
        f"burst: {found['sends']} sends at one instant after the steady run, each followed"
        f" to its end in {found['seconds']:.1f} s"
    )
    lines = [
        ("errors", f"{found['errors']}"),
        (
            "TTFT added p50 / p99 ms",
            f"{found['added_p50_ms']:.1f} / {found['added_p99_ms']:.1f}",
        ),
        ("POST generate p99 ms", f"{found['post_p99_ms']:.1f}"),
        ("CPU ms per turn: taverna", f"{found['cpu_ms_per_turn']:.1f}"),
        *_costs.cost_lines(found["costs"], found["cpu_ms_per_turn"]),
    ]
    for name, value in lines:
        print(f"  {name:<34} {value}")
    if found["first_error"]:
        print(f"  first error: {found['first_error']}")


def report_bursts(
    args: argparse.Namespace,
    results: list[dict[str, Any]],
    memory: list[list[tuple[float, float]]],
) -> dict[str, Any]:
    """Print the bursts' table; their figures for the JSON line."""
    load = os.getloadavg()
    where = (
        "one `taverna serve`"
        if args.workers == 1
        else f"{args.workers} `taverna serve` workers (PostgreSQL, Redis; each chat followed"
        " on another worker than it sent to)"
    )
    print(
        f"{args.burst or args.chats} chats streaming at once through {where}, {args.rounds} bursts;"
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
        row["costs"] = result["costs"]
        for name, value in _costs.cost_lines(result["costs"], row["cpu_ms_per_turn"]):
            print(f"       {name:<34} {value}")
    worst = max((b["added_p99_ms"] for b in figures["bursts"]), default=float("nan"))
    errors = sum(b["errors"] for b in figures["bursts"])
    # every chat sending at one instant is the burst of the targets, held to 1 s
    target = _costs.TARGET_BURST_P99_MS
    verdict = "PASS" if worst <= target and errors == 0 else "MISS"
    print(
        f"time to first token added by taverna, p99: {worst:.1f} ms"
        f" (target for a burst {target:.0f} ms, errors 0): {verdict}"
    )
    return figures


def report_soak(args: argparse.Namespace, soaked: dict[str, Any], figures: dict[str, Any]) -> None:
    """Print the soak's figures and add them to `figures`."""
    shown = min(args.soak_chats, args.chats)
    grown = f", imported with {args.soak_long} messages each" if args.soak_long else ""
    print(f"soak: {args.soak:g} min of mixed traffic over {shown} chats at once{grown}")
    if args.soak_warm > 0:
        print(
            f"  after {args.soak_warm:g} min of the same traffic to warm up (its errors are"
            " counted below; RSS MB per worker before it: "
            + ", ".join(f"{r:.0f}" for r in soaked["rss_cold"])
            + ")"
        )
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
    if args.soak_warm > 0:
        print(
            "  RSS MB per worker, before the warm-up -> end: "
            + ", ".join(
                f"{a:.0f} -> {b:.0f} ({(b - a) / a * 100:+.1f}%)"
                for a, b in zip(soaked["rss_cold"], soaked["rss_end"], strict=True)
            )
        )
    grew = window_growth(soaked["windows"])
    if grew is not None:
        print(
            "  chat messages in each prompt previewed (what a turn reads and keeps), "
            f"p50: {grew['first_minute_p50']:.0f} in the first minute, "
            f"{grew['last_minute_p50']:.0f} in the last "
            f"(cut by the context in {grew['last_minute_cut_pct']:.0f}% of the last minute's)"
        )
    print("  RSS MB per worker each minute (anonymous + file-backed):")
    for minute, sample in enumerate(soaked["curve"]):
        print(
            f"  {minute:>5} min  "
            + "   ".join(
                f"{w['VmRSS']:6.1f} ({w['RssAnon']:6.1f} + {w['RssFile']:5.1f})" for w in sample
            )
        )
    figures["soak"] = {
        "minutes": args.soak,
        "imported_messages": args.soak_long,
        "warm_up_minutes": args.soak_warm,
        "rss_before_warm_up_mb": soaked["rss_cold"],
        "errors": len(soaked["errors"]),
        "first_error": soaked["errors"][0] if soaked["errors"] else None,
        "done": {k: len(v) for k, v in soaked["timings"].items()},
        "rss_start_mb": soaked["rss_start"],
        "rss_end_mb": soaked["rss_end"],
        "rss_curve_mb": [[round(w["VmRSS"], 1) for w in sample] for sample in soaked["curve"]],
        "rss_anon_curve_mb": [
            [round(w["RssAnon"], 1) for w in sample] for sample in soaked["curve"]
        ],
        "prompt_messages": grew,
        "load_average_after": os.getloadavg()[0],
    }


def main() -> int:
    args = parse()
    reply_seconds = args.first_delay + args.tokens * args.gap
    tokens = [f" word{i}" for i in range(args.tokens)]
    expected = "".join(tokens).strip()
    soaked: dict[str, Any] | None = None
    steadied: dict[str, Any] | None = None
    problems: list[str] = []
    results: list[dict[str, Any]] = []
    memory: list[list[tuple[float, float]]] = []
    found: dict[str, Any] = {"recall": args.recall}
    with tempfile.TemporaryDirectory() as tmp:
        deployment = Deployment(Path(tmp), args.workers, args.redis, probe=not args.no_probe)
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
                if args.recall:
                    recall = {"enabled_chats": True}
                    client.put("/api/recall-settings", json=recall).raise_for_status()
                character = client.get("/api/characters").raise_for_status().json()[0]["id"]
                ours = [
                    client.post(
                        "/api/chats", json={"character_id": character, "title": f"load {i}"}
                    )
                    .raise_for_status()
                    .json()["id"]
                    for i in range(max(args.chats, args.burst))
                ]
                with _costs.busy_neighbour(args.busy_core) as busy:
                    if args.steady:
                        stub.default(tokens, args.first_delay, args.gap)
                        steadied = asyncio.run(
                            steady(
                                deployment,
                                ours[: args.chats],
                                args.steady,
                                reply_seconds,
                                args.think,
                                expected,
                            )
                        )
                        problems = stub.problems()
                        if any("error" in t for t in steadied["turns"]):
                            print(deployment.log_tails(), file=sys.stderr)
                        if args.burst:
                            found["burst"] = one_burst(
                                deployment, ours[: args.burst], expected, args.first_delay
                            )
                    else:
                        sending = ours[: args.burst or args.chats]
                        for round_number in range(args.rounds):
                            results.append(
                                a_round(deployment, client, sending, round_number, tokens, args)
                            )
                            memory.append(deployment.memory())
                found["busy"] = busy
                if args.soak > 0 and not args.steady:
                    soaked = run_soak(deployment, ours, character, args)
                time.sleep(args.rest)  # at rest: what the traffic left behind
                found["rss_rest_mb"] = [round(r, 1) for r, _ in deployment.memory()]
        finally:
            if any(r["errors"] for r in results) or (soaked and soaked["errors"]):
                print(deployment.log_tails(), file=sys.stderr)
            deployment.close()

    if steadied is not None:
        figures = report_steady(args, steadied, problems)
        found["steady"] = figures
        if "burst" in found:
            report_burst(found["burst"])
            figures["burst"] = found["burst"]
    else:
        figures = report_bursts(args, results, memory)
        bursts = figures["bursts"]
        if bursts:
            found["burst"] = {
                "sends": args.burst or args.chats,
                "errors": sum(b["errors"] for b in bursts),
                "added_p99_ms": max(b["added_p99_ms"] for b in bursts),
            }
    if soaked is not None:
        report_soak(args, soaked, figures)
        if not args.soak_long:
            found["soak_growth"] = _costs.soak_growth(
                figures["soak"]["rss_curve_mb"], 30, args.soak
            )
    found["turn"] = _costs.turn_figures(args.turn_json, args.turn)
    where = f"{args.workers} worker{'s' if args.workers > 1 else ''}"
    if args.steady:
        found["steady_under"] = f"{args.chats} streams of {args.tokens} tokens over {where}"
    found["streams"] = (args.chats, args.tokens, args.workers)
    share = found["busy"].get("core_share")
    found["busy_under"] = (
        f", a busy neighbour using {share:.2f} of a core"
        if share is not None
        else ", no busy neighbour (run --busy-core)"
    )
    figures["rss_rest_mb"] = found["rss_rest_mb"]
    figures["busy_core_share"] = share
    figures["recall"] = args.recall
    figures["targets"] = _costs.print_targets(found)
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
