"""A real server app over a real SQLite store in a temporary data folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from taverna.server.app import create_app
from taverna.server.context import AppContext, open_context
from tests.stubs.model_server import StubServer
from tests.support.api import connect, rev, start_chat

__all__ = ["rev"]  # where many modules import it from


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[AppContext]:
    context = open_context(tmp_path / "data")
    yield context


@pytest.fixture
def client(ctx: AppContext) -> Iterator[TestClient]:
    with TestClient(create_app(ctx)) as test_client:
        yield test_client


@pytest.fixture
def chat_id(client: TestClient, stub: StubServer) -> str:
    """A chat with Mira, the lighthouse keeper, over the stub model (the default connection)."""
    connect(client, stub)
    return start_chat(
        client, name="Mira", description="A lighthouse keeper.", first_mes="Welcome, {{user}}."
    )
