"""The services' fixtures: the chat service over a store, and data folders for the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from taverna.services.chats.service import ChatService
from taverna.store.sql import SqlStore
from tests.stubs.model_server import StubServer
from tests.support.folders import card_folder


@pytest.fixture
def chats(store: SqlStore) -> ChatService:
    return ChatService(store)


@pytest.fixture
def data(tmp_path: Path, stub: StubServer) -> Path:
    """A data folder with the packaged card and the module's stub model as "stub"."""
    return card_folder(tmp_path / "data", stub)


@pytest.fixture
def default_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The data folder `taverna` opens when a command names none (in $TAVERNA_DATA), on SQLite."""
    folder = tmp_path / "data"
    monkeypatch.setenv("TAVERNA_DATA", str(folder))
    monkeypatch.delenv("TAVERNA_DATABASE_URL", raising=False)
    return folder
