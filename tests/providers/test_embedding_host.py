"""The local embedding model in one process a machine: the workers' questions answered by
one host, with the vectors the model makes in-process; a host gone is started again, and
a host nobody asks leaves."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from taverna.providers.embedding_host import HostClient, socket_path
from taverna.providers.embeddings import LocalEmbedder
from taverna.providers.local_weights import load_local_model

pytestmark = pytest.mark.skipif(
    not LocalEmbedder.available(), reason="the local model is not installed"
)

TEXTS = ["Alice: the lighthouse keeper", "Bob: 灯塔看守人在哪里？", "a much longer text " * 40]


def _host_pid(path: Path) -> int:
    return int(path.with_suffix(".pid").read_text())


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_workers_share_one_host_that_comes_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAVERNA_MODEL_CACHE", str(tmp_path))
    path = socket_path()
    first, second = HostClient(), HostClient()  # as two workers would
    try:
        made = first.embed(TEXTS)
        host = _host_pid(path)
        np.testing.assert_array_equal(second.embed(TEXTS), made)
        assert _host_pid(path) == host  # the second asked the same host
        np.testing.assert_array_equal(made, load_local_model().encode(TEXTS))

        os.kill(host, signal.SIGKILL)  # a host gone (its socket left behind)
        deadline = time.monotonic() + 10
        while not _gone(host) and time.monotonic() < deadline:
            time.sleep(0.05)
        np.testing.assert_allclose(second.embed(TEXTS[:1]), made[:1], atol=1e-5)
        assert _host_pid(path) != host
    finally:
        if path.with_suffix(".pid").exists():
            os.kill(_host_pid(path), signal.SIGTERM)


def test_a_host_nobody_asks_leaves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVERNA_MODEL_CACHE", str(tmp_path))
    monkeypatch.setenv("TAVERNA_EMBED_IDLE", "1")
    client = HostClient()
    assert client.embed(TEXTS[:1]).shape == (1, 512)
    host = _host_pid(socket_path())
    deadline = time.monotonic() + 30
    while not _gone(host) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(host) and not socket_path().exists()
    assert client.embed(TEXTS[:1]).shape == (1, 512)  # the next question starts one
    os.kill(_host_pid(socket_path()), signal.SIGTERM)
