"""Regex test box benchmark: what runaway tries cost everyone else on the server.

A real `taverna serve` process; N clients at once each post 20 scripts whose pattern
backtracks without end (on a run of 5,000 "a") to `/api/regex/try`, while another client
reads the character list every 0.2 s. Each try spends at most a turn's regex time (1 s by
default), tries run one at a time on a thread of their own, and a pattern lets go of the
GIL while it matches; so the other reads stay quick. Prints the slowest and the median
read while the tries run, how long the tries took, then one line of JSON with the
figures and the machine's load.

    python bench/regex_try.py [--tries 45] [--reads 20]
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
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.stubs.taverna_server import TavernaServer

TRAP = {"scriptName": "trap", "findRegex": "/(a+)+$|q{}z/g", "replaceString": "x", "placement": [2]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tries", type=int, default=45)
    parser.add_argument("--reads", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = TavernaServer(Path(tmp) / "data").start()
        try:
            body = {"scripts": [TRAP] * 20, "text": "a" * 5000 + "b", "placement": 2}
            took: list[float] = []

            def attack() -> None:
                began = time.perf_counter()
                httpx.post(f"{server.url}/api/regex/try", json=body, timeout=600)
                took.append(time.perf_counter() - began)

            threads = [threading.Thread(target=attack) for _ in range(args.tries)]
            began = time.perf_counter()
            for thread in threads:
                thread.start()
            time.sleep(0.5)
            reads: list[float] = []
            for _ in range(args.reads):
                start = time.perf_counter()
                httpx.get(f"{server.url}/api/characters", timeout=600)
                reads.append(time.perf_counter() - start)
                time.sleep(0.2)
            for thread in threads:
                thread.join()
            total = time.perf_counter() - began
        finally:
            server.stop()
    figures = {
        "tries": args.tries,
        "read_worst_s": round(max(reads), 3),
        "read_median_s": round(statistics.median(reads), 3),
        "try_worst_s": round(max(took), 2),
        "all_tries_s": round(total, 2),
        "load": os.getloadavg()[0],
    }
    print(f"{args.tries} runaway tries at once (20 scripts each)")
    print(
        f"  another account's read: worst {figures['read_worst_s']} s, median {figures['read_median_s']} s"
    )
    print(f"  slowest try {figures['try_worst_s']} s; all done in {figures['all_tries_s']} s")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
