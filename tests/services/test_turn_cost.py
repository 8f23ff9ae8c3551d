"""A warm turn costs what its work costs: the chat is read once, the person's message is
one transaction and the reply another, and the library is not read again while it has
not changed. Counted on SQLite and, when TAVERNA_TEST_DATABASE_URL is set, PostgreSQL,
by listening to the store's engine while the second send of a chat runs end to end."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from taverna.model.chat import CharacterRef
from taverna.model.lorebook import Entry, Lorebook
from taverna.services.chats.service import ChatService
from taverna.services.connections.service import ConnectionService
from taverna.services.library.active_settings import set_active
from taverna.services.library.service import LibraryKind, LibraryService
from taverna.services.library.watch import LibraryWatch
from taverna.services.memory.recall import RecallService
from taverna.services.turns import Ending, GenerationService
from taverna.services.turns.context import TurnContexts
from taverna.services.turns.paths import PathEnds
from taverna.store.sql import SqlStore
from tests.stubs import Reply, StubServer
from tests.support.folders import connect_stub

# What a warm turn may cost at most: one read (the chat, what changed on its path since
# the kept end, what changed in the library; the connections are kept), the person's
# message written, the reply written: three transactions, at most 15 statements. On
# PostgreSQL a write is three statements (the claim of the chat, its text with the search
# index, the rest held and sent as one). SQLite runs the held writes one by one (in the
# process, a statement saves no round trip) and counts its BEGINs; a write resumes from
# what the process's last write of the chat left, with no claim (10 statements a write):
# its ceiling is what a turn costs there today, above the goal.
MOST_STATEMENTS = {"sqlite": 25, "postgresql": 10}
MOST_TRANSACTIONS = 3


@dataclass
class Cost:
    statements: list[str] = field(default_factory=list)
    transactions: int = 0


@contextmanager
def counted(store: SqlStore) -> Iterator[Cost]:
    """Every statement and transaction the store's engine runs meanwhile."""
    cost = Cost()

    def statement(conn: Any, cursor: Any, text: str, *args: Any) -> None:
        cost.statements.append(" ".join(text.split())[:160])

    def begin(conn: Any) -> None:
        cost.transactions += 1

    sa.event.listen(store.engine, "before_cursor_execute", statement)
    sa.event.listen(store.engine, "begin", begin)
    try:
        yield cost
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", statement)
        sa.event.remove(store.engine, "begin", begin)


def _service(store: SqlStore, tmp_path: Path, stub: StubServer) -> tuple[GenerationService, str]:
    """A served chat's turn as a server runs it: the assembly engine over a character, its
    lorebook and a preset in use, through the stub model."""
    library = LibraryService(store)
    library.put_lorebook(
        Lorebook(
            name="Harbour",
            entries=(
                Entry(uid=0, key=("lantern",), content="Lanterns burn whale oil."),
                Entry(uid=1, key=("tide",), content="Tides come twice a day."),
            ),
        )
    )
    preset = library.put(
        LibraryKind.CHAT_COMPLETION_PRESET,
        "Small",
        {"openai_max_context": 2048, "openai_max_tokens": 50},
    )
    set_active(store, "chat_completion_preset", preset.id)
    # what a server keeps of the settings (the connections too) is read again only after
    # a write of the library
    watch = LibraryWatch().watch(store)
    connections = connect_stub(ConnectionService(store, tmp_path, versions=watch), stub)
    chats = ChatService(store)
    paths = PathEnds(store)
    recall = RecallService(store, watch=watch)
    turns = TurnContexts(store, paths=paths, recall=recall)
    service = GenerationService(store, connections, turns, chats=chats, paths=paths)
    chat = chats.create_chat(
        "Aria",
        characters=[CharacterRef("Aria")],
        user_name="Alex",
        greetings=["Welcome to the harbour."],
        metadata={"world_info": "Harbour"},
    ).chat
    return service, chat.id


async def _turn(service: GenerationService, chat_id: str, text: str) -> None:
    run = await service.send(chat_id, text)
    done = await run.wait()
    assert done.outcome is Ending.SAVED, done


def test_a_warm_turn_reads_the_chat_once_and_writes_twice(
    store: SqlStore, tmp_path: Path, stub: StubServer
) -> None:
    service, chat_id = _service(store, tmp_path, stub)

    async def turns() -> Cost:
        stub.script(Reply(tokens=["The lantern", " is lit."]))
        await _turn(service, chat_id, "Is the lantern lit?")  # the cold turn
        stub.script(Reply(tokens=["The tide", " turns."]))
        with counted(store) as cost:
            await _turn(service, chat_id, "And the tide?")
        return cost

    cost = asyncio.run(turns())
    said = "\n".join(cost.statements)
    most = MOST_STATEMENTS[store.engine.dialect.name]
    assert len(cost.statements) <= most, f"{len(cost.statements)}:\n{said}"
    assert cost.transactions <= MOST_TRANSACTIONS, f"{cost.transactions}:\n{said}"
