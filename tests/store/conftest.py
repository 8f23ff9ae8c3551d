"""The `store` fixture: every store test runs on SQLite and, when configured, PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from taverna.store.sql import SqlStore
from taverna.store.testing import backends, temporary_store


@pytest.fixture(params=backends())
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStore]:
    with temporary_store(request.param, tmp_path) as opened:
        yield opened
