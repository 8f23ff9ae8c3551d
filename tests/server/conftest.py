"""A real server app over a real SQLite store in a temporary data folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from taverna.server.app import create_app
from taverna.server.context import AppContext, open_context


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[AppContext]:
    context = open_context(tmp_path / "data")
    yield context


@pytest.fixture
def client(ctx: AppContext) -> Iterator[TestClient]:
    with TestClient(create_app(ctx)) as test_client:
        yield test_client


def rev(client: TestClient, chat_id: str) -> int:
    """The chat's revision as a page reads it, to name in a write."""
    return int(client.get(f"/api/chats/{chat_id}").json()["revision"])
