"""Data folders and stores set up for a test: the packaged card, the stub model as a connection."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from taverna.services.connections import ConnectionService
from taverna.services.data import open_data
from taverna.services.library import LibraryService
from tests.stubs.model_server import StubServer

CARD = "Ione Calder.png"  # a card the package ships in taverna/data


def connect_stub(
    connections: ConnectionService, stub: StubServer, *, anthropic: bool = False
) -> ConnectionService:
    """Add the stub's OpenAI API as "stub" (the first connection, so the default) and, with
    `anthropic`, its Anthropic API as "claude"; both with the stub's key and `stub-model`."""
    connections.add("stub", "openai", url=stub.base_url("openai"), model="stub-model", key=stub.key)
    if anthropic:
        connections.add(
            "claude", "anthropic", url=stub.base_url("anthropic"), model="stub-model", key=stub.key
        )
    return connections


def card_folder(folder: Path, stub: StubServer) -> Path:
    """A data folder holding the packaged card and the stub as its connection "stub"."""
    with open_data(folder) as opened:
        LibraryService(opened.store).import_bytes(
            (files("taverna") / "data" / CARD).read_bytes(), CARD
        )
        connect_stub(ConnectionService(opened.store, opened.path), stub)
    return folder
