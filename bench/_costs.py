"""What `bench/load.py` adds to its figures: the cost of a turn inside the workers (SQL
statements, transactions, a sampling profile by part of a turn), a busy neighbour on one
core, and the issue's targets with PASS/MISS.

The workers record their costs when `TAVERNA_COST_PROBE` names a folder
(taverna/server/cost_probe.py): each writes its running totals to FOLDER/PID.json five
times a second; a figure here is the difference of two readings over the turns between.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("read", "build", "write", "relay", "backup", "serve", "loop", "other")
PROBE_REFRESH = 0.25  # a little over the probe's 0.2 s between writes

TARGET_CPU_MS = 10.0
TARGET_STEADY_P99_MS = 250.0
TARGET_BURST_P99_MS = 1000.0
TARGET_RSS_REST_MB = 250.0
TARGET_SOAK_GROWTH_PCT = 10.0
TARGET_SWITCH_MS = 50.0
TARGET_TTR_MS = 15.0
# bench/turn.py's run for the two targets it measures (a 10,000 and a 100,000 message chat)
TURN_ARGS = ["--sizes", "10000,100000", "--repeat", "5", "--turns", "3", "--no-browser"]


def cpu_seconds(pid: int, children: bool = False) -> float:
    """User + system CPU time a process has used so far, all its threads; `children`: that
    of its children that have ended instead (a worker's backup processes). /proc/PID/stat"""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # after the command name, which may hold spaces
    at = 13 if children else 11
    return (int(fields[at]) + int(fields[at + 1])) / os.sysconf("SC_CLK_TCK")


def read_probe(folder: Path | None, pids: list[int]) -> list[dict[str, Any]]:
    """Each worker's running totals as last written ({} where it has written none)."""
    readings: list[dict[str, Any]] = []
    for pid in pids:
        try:
            found = json.loads((folder / f"{pid}.json").read_text()) if folder else {}
        except (OSError, ValueError):
            found = {}
        found["child_cpu_s"] = cpu_seconds(pid, children=True)
        readings.append(found)
    return readings


def turn_costs(
    before: list[dict[str, Any]], after: list[dict[str, Any]], turns: int
) -> dict[str, Any]:
    """Per turn over every worker: statements, transactions, commits, CPU (less the
    sampler's own), the backup processes' CPU, and each part's share of the sampled CPU."""
    turns = max(turns, 1)

    def total(key: str) -> float:
        return float(sum(b.get(key, 0) - a.get(key, 0) for a, b in zip(before, after, strict=True)))

    parts = {
        part: float(
            sum(
                b.get("cpu_ns", {}).get(part, 0) - a.get("cpu_ns", {}).get(part, 0)
                for a, b in zip(before, after, strict=True)
            )
        )
        for part in PARTS
    }
    sampled = sum(parts.values())
    process = total("process_cpu_ns")
    probe = total("probe_cpu_ns")
    costs: dict[str, Any] = {
        "probed": all("pid" in a for a in after),
        "statements_per_turn": round(total("statements") / turns, 2),
        "changes_per_turn": round(total("changes") / turns, 2),
        "transactions_per_turn": round(total("transactions") / turns, 2),
        "commits_per_turn": round(total("commits") / turns, 2),
        "probe_cpu_ms_per_turn": round(probe / 1e6 / turns, 3),
        "backup_process_cpu_ms_per_turn": round(total("child_cpu_s") * 1000 / turns, 2),
        "share_pct": {p: round(100 * v / sampled, 1) if sampled else 0.0 for p, v in parts.items()},
        # CPU of threads the sampler never saw (no Python frame), beside the sampled
        "unsampled_pct": round(100 * (process - probe - sampled) / process, 1) if process else 0.0,
    }
    return costs


def cost_lines(costs: dict[str, Any], cpu_ms_per_turn: float) -> list[tuple[str, str]]:
    """The cost block's lines (name, value), beside the CPU per turn measured outside."""
    if not costs["probed"]:
        return [("cost of a turn", "not recorded (run without --no-probe)")]
    shares = costs["share_pct"]
    return [
        (
            "SQL statements per turn",
            f"{costs['statements_per_turn']:.1f} ({costs['changes_per_turn']:.1f} not SELECT)",
        ),
        (
            "transactions per turn",
            f"{costs['transactions_per_turn']:.1f} ({costs['commits_per_turn']:.1f} committed)",
        ),
        (
            "CPU ms per turn, less the sampler",
            f"{cpu_ms_per_turn - costs['probe_cpu_ms_per_turn']:.1f}"
            f" (sampler {costs['probe_cpu_ms_per_turn']:.2f}; backup processes"
            f" {costs['backup_process_cpu_ms_per_turn']:.1f} besides)",
        ),
        (
            "CPU share by part (sampled)",
            "  ".join(f"{p} {shares[p]:.0f}%" for p in PARTS)
            + f"  (unsampled threads {costs['unsampled_pct']:.0f}%)",
        ),
    ]


@contextmanager
def busy_neighbour(enabled: bool) -> Iterator[dict[str, float]]:
    """A process keeping one core busy (a Python loop pinned to the last CPU) while the
    block runs; yields {"core_share": ...} filled at the end: the cores it used on average,
    so the margin is measured, not hoped for."""
    found: dict[str, float] = {}
    if not enabled:
        yield found
        return
    last = (os.cpu_count() or 1) - 1
    code = f"import os\ntry: os.sched_setaffinity(0, {{{last}}})\nexcept OSError: pass\nwhile True: pass\n"
    process = subprocess.Popen([sys.executable, "-c", code])
    began = time.monotonic()
    try:
        yield found
    finally:
        used = cpu_seconds(process.pid)
        found["core_share"] = round(used / max(time.monotonic() - began, 1e-9), 2)
        process.terminate()
        process.wait(timeout=10)


def turn_figures(path: Path | None, run: bool) -> dict[str, Any] | None:
    """bench/turn.py's figures: read from its JSON line in `path`, or by running it."""
    if path is not None:
        lines = path.read_text().strip().splitlines()
        return dict(json.loads(lines[-1]))
    if not run:
        return None
    print(f"running bench/turn.py {' '.join(TURN_ARGS)} ...", flush=True)
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "turn.py"), *TURN_ARGS],
        capture_output=True,
        text=True,
        check=False,
    )
    last = done.stdout.strip().splitlines()[-1:] or ["{}"]
    try:
        return dict(json.loads(last[0]))
    except ValueError:
        print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
        return {}


def soak_growth(
    curve_mb: list[list[float]], last_minutes: float, soak_minutes: float
) -> tuple[float, float] | None:
    """The largest growth of a worker's RSS (%) over the soak's last `last_minutes`
    (the curve has a sample at the start, one a minute, one at the end), and the minutes
    it covers (fewer in a shorter soak)."""
    if len(curve_mb) < 2:
        return None
    back = min(int(last_minutes), len(curve_mb) - 1)
    start, end = curve_mb[-1 - back], curve_mb[-1]
    growth = max((b - a) / a * 100 for a, b in zip(start, end, strict=True))
    return growth, float(min(back, soak_minutes))


def target_rows(found: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(target, figure, PASS/MISS/n/a, under what) for every target of the issue; a verdict
    ends in "?" when the run's conditions were not the target's (the last column says)."""
    rows: list[tuple[str, str, str, str]] = []

    def check(
        name: str, value: float | None, limit: float, unit: str, under: str, fit: bool = True
    ) -> None:
        if value is None:
            rows.append((name, "-", "n/a", under))
        else:
            verdict = ("PASS" if value <= limit else "MISS") + ("" if fit else "?")
            rows.append((name, f"{value:.1f} {unit}", verdict, under))

    steady = found.get("steady")
    chats, tokens, workers = found.get("streams", (0, 0, 0))
    full = chats >= 200 and tokens >= 200
    check(
        f"taverna CPU per turn <= {TARGET_CPU_MS:.0f} ms (all workers, steady)",
        steady["cpu_ms_per_turn_less_sampler"] if steady else None,
        TARGET_CPU_MS,
        "ms",
        found.get("steady_under", "run --steady"),
        full,
    )
    busy = found.get("busy_under", "")
    check(
        f"steady first token added p99 <= {TARGET_STEADY_P99_MS:.0f} ms, errors 0",
        (steady["added_p99_ms"] if not steady["errors_whole_run"] else float("inf"))
        if steady
        else None,
        TARGET_STEADY_P99_MS,
        "ms",
        found.get("steady_under", "run --steady") + busy,
        full and workers == 2 and "no busy" not in busy,
    )
    burst = found.get("burst")
    check(
        f"burst: first token added p99 <= {TARGET_BURST_P99_MS:.0f} ms, errors 0",
        (burst["added_p99_ms"] if not burst["errors"] else float("inf")) if burst else None,
        TARGET_BURST_P99_MS,
        "ms",
        f"{burst['sends']} sends at one instant, {burst['errors']} errors"
        if burst
        else "run --burst N",
        burst is not None and burst["sends"] >= 200,
    )
    rest = found.get("rss_rest_mb")
    check(
        f"RSS per worker at rest <= {TARGET_RSS_REST_MB:.0f} MB (recall on)",
        max(rest) if rest else None,
        TARGET_RSS_REST_MB,
        "MB",
        "recall on" if found.get("recall") else "recall off: run --recall",
        bool(found.get("recall")),
    )
    soak = found.get("soak_growth")
    check(
        f"new-chat soak flat in its last 30 min (within {TARGET_SOAK_GROWTH_PCT:.0f}%)",
        soak[0] if soak else None,
        TARGET_SOAK_GROWTH_PCT,
        "%",
        f"growth over the last {soak[1]:g} min" if soak else "run --soak 40 (new chats)",
        soak is not None and soak[1] >= 30,
    )
    turn = found.get("turn") or {}
    source = "bench/turn.py" if turn else "run --turn (bench/turn.py) or --turn-json"
    if found.get("turn") == {}:
        source = "bench/turn.py gave no figures (its output is above)"
    for name, key, limit in (
        ("candidate switch (API) at 100,000 messages", "switch_api_100000_ms", TARGET_SWITCH_MS),
        (
            "warm time to request, 10,000 messages + 10,000 entries",
            "ttr_warm_10000_ms",
            TARGET_TTR_MS,
        ),
    ):
        value = turn.get(key)
        check(
            f"{name} <= {limit:.0f} ms",
            float(value) if isinstance(value, int | float) else None,
            limit,
            "ms",
            source,
        )
    return rows


def print_targets(found: dict[str, Any]) -> list[dict[str, str]]:
    """Print the targets with their figures and verdicts and the load average; returns
    them for the JSON line."""
    load = os.getloadavg()
    rows = target_rows(found)
    print(
        f"targets (load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
        f" on {os.cpu_count()} CPUs):"
    )
    width = max(len(r[0]) for r in rows)
    for name, figure, verdict, under in rows:
        print(f"  {name:<{width}}  {figure:>10}  {verdict:<5}  {under}")
    if any(verdict.endswith("?") for _, _, verdict, _ in rows):
        print("  (?: measured under other conditions than the target's, as the last column says)")
    return [
        {"target": name, "figure": figure, "verdict": verdict, "under": under}
        for name, figure, verdict, under in rows
    ]
