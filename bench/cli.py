"""How long the command line takes to start: each command run N times in fresh processes.

`taverna version` and `taverna inspect` of a small card should answer within 150 ms of
wall time. Every figure is a whole process (interpreter start, imports, the work, exit),
as a person running the command waits for it; `python -c pass` is the floor no command
can go below. The machine's load average is printed beside the figures: on a busy
machine every process waits for a core, and wall times grow with the load.

The commands run with the bytecode cache on, as on a person's machine (an installed
package is compiled when it is installed): PYTHONDONTWRITEBYTECODE, if set here, is
removed from their environment, and a first run before the timed ones writes the cache.

Prints a table, then one line of JSON (milliseconds; `--runs N`, default 21).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_MS = 150.0
SAMPLE_PNG = Path(__file__).resolve().parents[1] / "taverna" / "data" / "Ione Calder.png"
SMALL_CARD = {
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {
        "name": "Mira",
        "description": "{{char}} keeps the lighthouse at the end of the breakwater.",
        "personality": "patient, dry",
        "scenario": "A storm is coming in.",
        "first_mes": "*Mira looks up from the lamp.* Storm's coming.",
        "mes_example": "",
        "tags": ["coast"],
        "extensions": {"talkativeness": "0.5"},
    },
}


def taverna() -> list[str]:
    """The installed console script, or the entry point run by this interpreter."""
    script = Path(sys.executable).with_name("taverna")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "from taverna.cli.main import main; main()"]


# What a person's shell has: bytecode is cached (see the module's docstring).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run(command: list[str], runs: int) -> dict[str, float]:
    """Median and minimum wall time, and median CPU time, of `command` over `runs` runs."""
    walls, cpus = [], []
    # warm the file cache and write the bytecode cache
    subprocess.run(command, check=True, capture_output=True, env=ENV)
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, env=ENV)
        walls.append((time.perf_counter() - start) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        cpus.append(cpu * 1000)
    return {
        "median": statistics.median(walls),
        "min": min(walls),
        "cpu": statistics.median(cpus),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory(prefix="taverna-bench-cli-") as temp:
        card = Path(temp) / "Mira.json"
        card.write_text(json.dumps(SMALL_CARD, indent=4), encoding="utf-8")
        out = Path(temp) / "Mira.png"
        cli = taverna()
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "taverna version": [*cli, "version"],
            "taverna inspect card.json": [*cli, "inspect", str(card)],
            "taverna inspect card.png": [*cli, "inspect", str(SAMPLE_PNG)],
            "taverna convert card.json card.png": [*cli, "convert", "--force", str(card), str(out)],
            "taverna --help": [*cli, "--help"],
        }
        load_before = os.getloadavg()
        results = {name: run(command, runs) for name, command in commands.items()}
        load_after = os.getloadavg()
    width = max(map(len, results))
    print(f"{runs} runs each; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    print(f"{'command'.ljust(width)}  median ms  min ms  cpu ms")
    for name, figures in results.items():
        print(
            f"{name.ljust(width)}  {figures['median']:9.1f}  {figures['min']:6.1f}"
            f"  {figures['cpu']:6.1f}"
        )
    floor = results["python -c pass"]["median"]
    for name in ("taverna version", "taverna inspect card.json"):
        median = results[name]["median"]
        verdict = "within" if median <= TARGET_MS else "over"
        print(
            f"{name}: {median:.1f} ms median, {verdict} the {TARGET_MS:.0f} ms target "
            f"({median / floor:.1f}x an empty interpreter)"
        )
    summary: dict[str, float] = {"load_average": round(load_before[0], 2), "runs": runs}
    for name, figures in results.items():
        key = name.replace("taverna ", "").replace(" ", "_").replace(".", "_").replace("-", "")
        summary[f"{key}_median_ms"] = round(figures["median"], 1)
        summary[f"{key}_min_ms"] = round(figures["min"], 1)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
