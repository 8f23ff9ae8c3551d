"""The one gate every model request passes: each request, tool rounds included, counts
against its account's hourly quota, and none goes out past it."""

from __future__ import annotations

import ast
import asyncio
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import taverna
from taverna.errors import QuotaExceeded
from taverna.model.chat import CharacterRef
from taverna.providers.request import ToolSpec
from taverna.services.accounts.service import AccountService
from taverna.services.chats.service import ChatService
from taverna.services.connections.model_gate import ModelGate
from taverna.services.connections.service import ConnectionService
from taverna.services.plugins.tools import Tool, ToolRegistry
from taverna.services.turns import Ending, GenerationService, TurnRequest
from taverna.store.sql import SqlStore
from tests.services.test_generation import simple_builder
from tests.stubs import Reply, StubServer

KEY = "sk-gate-test-key-0001"
pytestmark = pytest.mark.stub_model(key=KEY)
PACKAGE = Path(taverna.__file__).parent
# Where a model stream may be opened: the transport itself and the gate in front of it.
OPENERS = {
    PACKAGE / "providers" / "transport.py",
    PACKAGE / "services" / "connections" / "model_gate.py",
}


def _account(store: SqlStore, name: str, per_hour: int | None) -> str:
    accounts = AccountService(store)
    account = accounts.add(name, "correct horse battery")
    accounts.set_quota(name, storage_bytes=None, generations_per_hour=per_hour)
    return account.id


def test_no_module_but_the_gate_opens_a_model_stream() -> None:
    """A new model call cannot go round the quota by calling the transport itself."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path in OPENERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            named = (isinstance(node, ast.Name) and node.id == "stream_events") or (
                isinstance(node, ast.Attribute) and node.attr == "stream_events"
            )
            if isinstance(node, ast.ImportFrom) and any(
                alias.name == "stream_events" for alias in node.names
            ):
                named = True
            if named:
                found.append(f"{path.relative_to(PACKAGE)}:{getattr(node, 'lineno', '?')}")
    assert found == []


def test_requests_count_until_the_quota_then_are_refused_and_not_counted(
    store: SqlStore,
) -> None:
    alice = _account(store, "alice", 3)
    gate = ModelGate(store)
    for _ in range(3):
        gate.check(alice)
        gate.admit(alice)
    with pytest.raises(QuotaExceeded) as refused:
        gate.check(alice)
    assert refused.value.code == "generation_quota_used"
    with pytest.raises(QuotaExceeded) as refused:
        gate.admit(alice)
    assert "alice has used 3 of 3 model requests this hour" in refused.value.message
    assert store.generations_since(alice, datetime.now(UTC) - timedelta(hours=1)) == 3
    # an hour on, the oldest have left the window
    later = ModelGate(store, clock=lambda: datetime.now(UTC) + timedelta(hours=1, seconds=1))
    later.check(alice)


def test_the_single_user_and_accounts_without_a_quota_are_never_refused(
    store: SqlStore,
) -> None:
    bob = _account(store, "bob", None)
    gate = ModelGate(store)
    for _ in range(5):
        gate.admit("")
        gate.admit(bob)
        gate.admit("no-such-account")
    since = datetime.now(UTC) - timedelta(hours=1)
    assert store.generations_since("", since) == 0
    assert store.generations_since(bob, since) == 5  # counted, for My account


def test_requests_at_once_never_pass_the_quota(store: SqlStore) -> None:
    """Many requests of one account at once, each through a gate of its own (as many
    server processes over one database): exactly the quota's number goes out."""
    carol = _account(store, "carol", 5)
    gates = [ModelGate(store) for _ in range(16)]
    admitted: list[int] = []
    refused: list[int] = []
    start = threading.Barrier(16)

    def ask(i: int) -> None:
        start.wait()
        try:
            gates[i].admit(carol)
            admitted.append(i)
        except QuotaExceeded:
            refused.append(i)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (len(admitted), len(refused)) == (5, 11)
    assert store.generations_since(carol, datetime.now(UTC) - timedelta(hours=1)) == 5


def test_each_tool_round_is_a_request_of_its_own(
    store: SqlStore, stub: StubServer, tmp_path: Path
) -> None:
    dana = _account(store, "dana", 2)
    connections = ConnectionService(store, tmp_path).of(dana)
    connections.add("stub", "openai", url=stub.base_url("openai"), model="stub-model", key=KEY)
    chats = ChatService(store)
    registry = ToolRegistry(
        [
            Tool(
                ToolSpec("lookup", "Look a word up", {"type": "object", "properties": {}}),
                lambda args: {"meaning": "a river mouth"},
            )
        ]
    )
    turns: list[TurnRequest] = []
    service = GenerationService(
        store,
        connections,
        simple_builder(turns, tools=("lookup",)),
        chats=chats,
        tools=registry,
    )
    chat = chats.create_chat(
        "Aria", characters=[CharacterRef("Aria")], greetings=["Welcome."], owner=dana
    ).chat
    looping = Reply(tokens=["Let me look."], tool_calls=[("lookup", {"word": "delta"})])
    stub.clear()
    stub.script(looping, looping, looping)
    before = len(stub.requests)

    async def main() -> tuple[Ending, str]:
        run = await service.send(chat.id, "What is a delta?")
        done = await run.wait()
        return done.outcome, done.error or ""

    outcome, error = asyncio.run(main())
    # two rounds went out; the third was refused before it was sent
    assert len(stub.requests) - before == 2
    assert outcome is Ending.FAILED and "2 of 2 model requests this hour" in error
    assert store.generations_since(dana, datetime.now(UTC) - timedelta(hours=1)) == 2
    path = [(n.role.value, n.content) for n in store.active_path(chat.id).nodes]

    async def again() -> None:
        await service.send(chat.id, "Still there?")

    # the next turn is refused before anything is written or sent
    with pytest.raises(QuotaExceeded):
        asyncio.run(again())
    assert [(n.role.value, n.content) for n in store.active_path(chat.id).nodes] == path
    assert len(stub.requests) - before == 2
