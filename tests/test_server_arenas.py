"""A server's threads share a few allocator arenas (glibc), so memory one thread frees
serves the others: checked by counting the heaps glibc reports after many threads
allocated, in a fresh interpreter (the setting must come before any thread starts)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from taverna.cli.entry import SERVER_ARENAS

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator only")

COUNT_HEAPS = """
import ctypes, re, sys, threading
from taverna.cli.entry import few_arenas
if sys.argv[1] == "few":
    few_arenas()
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.fopen.restype = ctypes.c_void_p
start = threading.Barrier(12)
def work():
    start.wait()
    for _ in range(200):
        libc.free(ctypes.c_void_p(libc.malloc(4096)))
threads = [threading.Thread(target=work) for _ in range(12)]
for t in threads: t.start()
for t in threads: t.join()
out = sys.argv[2]
fp = libc.fopen(out.encode(), b"w")
libc.malloc_info(0, ctypes.c_void_p(fp))
libc.fclose(ctypes.c_void_p(fp))
print(len(re.findall(r'<heap nr="', open(out).read())))
"""


def _heaps(mode: str, tmp_path: Path) -> int:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    found = subprocess.run(
        [sys.executable, "-c", COUNT_HEAPS, mode, str(tmp_path / f"{mode}.xml")],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    return int(found.stdout.strip())


def test_a_servers_threads_share_a_few_arenas(tmp_path: Path) -> None:
    assert _heaps("few", tmp_path) <= SERVER_ARENAS
    # the check can tell: without the setting, the threads take arenas of their own
    assert _heaps("default", tmp_path) > SERVER_ARENAS
