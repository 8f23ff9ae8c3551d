"""Uploads benchmark: what other requests wait while a big upload is taken in, and what an
oversized body costs the server. Through a real `taverna serve` over HTTP.

- A 10,000-entry lorebook is imported by upload while another client asks `/api/health`
  every 5 ms: the import's time, and the health checks' waits during it against idle ones.
- A 200 MiB JSON body sent in chunks (no length, no content type): the answer, the time to
  it, and the server's peak memory before and after.

Prints a table, then one line of JSON with the figures.

    python bench/uploads.py [--entries 10000] [--body-mib 200]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.stubs.taverna_server import TavernaServer  # noqa: E402

MIB = 1024 * 1024


def lorebook(entries: int) -> bytes:
    book = {
        "entries": {
            str(i): {
                "uid": i,
                "key": [f"key{i}", f"other{i}"],
                "keysecondary": [],
                "comment": f"entry {i}",
                "content": f"Entry {i} tells of the harbour, the tide and the lamps. " * 4,
                "constant": False,
                "selective": True,
                "order": 100,
                "position": 0,
                "disable": False,
            }
            for i in range(entries)
        }
    }
    return json.dumps(book).encode()


class HealthProbe:
    """Asks `/api/health` every `interval` seconds from a thread of its own, noting each
    answer's wait and when it was asked."""

    def __init__(self, url: str, interval: float = 0.005) -> None:
        self.url = url
        self.interval = interval
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=60) as client:
            while not self._stop.is_set():
                asked = time.perf_counter()
                client.get(f"{self.url}/api/health")
                self.samples.append((asked, (time.perf_counter() - asked) * 1000))
                time.sleep(self.interval)

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def waits(self, start: float, end: float) -> list[float]:
        return [ms for asked, ms in self.samples if start <= asked <= end]


def import_while_probing(server: TavernaServer, entries: int) -> dict[str, Any]:
    data = lorebook(entries)
    with HealthProbe(server.url) as probe:
        time.sleep(0.5)  # idle waits first
        idle_end = time.perf_counter()
        started = time.perf_counter()
        response = httpx.post(
            f"{server.url}/api/lorebooks/import",
            files={"file": ("big.json", data, "application/json")},
            timeout=300,
        )
        ended = time.perf_counter()
        time.sleep(0.2)
    assert response.status_code == 201, response.text
    idle = probe.waits(0, idle_end)
    during = probe.waits(started, ended)
    return {
        "entries": entries,
        "upload_mib": round(len(data) / MIB, 2),
        "import_ms": round((ended - started) * 1000, 1),
        "health_checks_during": len(during),
        "health_ms_idle_median": round(statistics.median(idle), 2),
        "health_ms_during_median": round(statistics.median(during), 2) if during else None,
        "health_ms_during_max": round(max(during), 2) if during else None,
    }


def chunks(total: int, size: int = MIB) -> Iterator[bytes]:
    piece = b"x" * size
    sent = 0
    yield b'{"name": "'
    while sent < total:
        yield piece
        sent += size


def oversized_body(server: TavernaServer, body_mib: int) -> dict[str, Any]:
    _, peak_before = server.memory_mb()
    started = time.perf_counter()
    status = 0
    try:
        response = httpx.post(
            f"{server.url}/api/personas", content=chunks(body_mib * MIB), timeout=120
        )
        status = response.status_code
    except httpx.HTTPError:
        status = -1  # the server closed the connection after answering
    elapsed = (time.perf_counter() - started) * 1000
    _, peak_after = server.memory_mb()
    health = httpx.get(f"{server.url}/api/health", timeout=10).status_code
    return {
        "body_mib": body_mib,
        "status": status,
        "answer_ms": round(elapsed, 1),
        "server_peak_mb_before": round(peak_before, 1),
        "server_peak_mb_after": round(peak_after, 1),
        "health_after": health,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--body-mib", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        server = TavernaServer(Path(folder) / "data").start()
        try:
            imported = import_while_probing(server, args.entries)
            oversized = oversized_body(server, args.body_mib)
        finally:
            server.stop()
    print(f"{'lorebook import by upload':<44} {imported['entries']:>8} entries")
    print(f"{'  upload size (MiB)':<44} {imported['upload_mib']:>8}")
    print(f"{'  import (ms)':<44} {imported['import_ms']:>8}")
    print(f"{'  health checks answered during it':<44} {imported['health_checks_during']:>8}")
    print(f"{'  health wait idle, median (ms)':<44} {imported['health_ms_idle_median']:>8}")
    print(f"{'  health wait during, median (ms)':<44} {imported['health_ms_during_median']!s:>8}")
    print(f"{'  health wait during, longest (ms)':<44} {imported['health_ms_during_max']!s:>8}")
    print(f"{'chunked JSON body, no length':<44} {oversized['body_mib']:>8} MiB")
    print(f"{'  answer (HTTP status)':<44} {oversized['status']:>8}")
    print(f"{'  time to the answer (ms)':<44} {oversized['answer_ms']:>8}")
    print(
        f"{'  server peak memory before / after (MB)':<44} "
        f"{oversized['server_peak_mb_before']:>8} / {oversized['server_peak_mb_after']}"
    )
    print(json.dumps({"benchmark": "uploads", "import": imported, "oversized": oversized}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
