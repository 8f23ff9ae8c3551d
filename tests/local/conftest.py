"""Fixtures of the bundled local model's tests: a workspace whose default connection is it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from taverna.services.connections import local_models
from taverna.services.house.workspace import (
    LOCAL_CONNECTION,
    Workspace,
    open_workspace,
    seed_local_model,
)


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    """A workspace with the bundled model as its connection; the model process is stopped
    after the test."""
    ws = open_workspace(tmp_path / "data", background_backups=False)
    assert seed_local_model(ws.connections) == LOCAL_CONNECTION
    try:
        yield ws
    finally:
        local_models.local_models().stop()
        ws.close()
