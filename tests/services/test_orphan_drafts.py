"""A run whose process died is adopted by another, which keeps its text as a draft of the
chat's account, whoever that is and whatever the adopting process's own owner."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from taverna.model.chat import CharacterRef
from taverna.services.chats.service import ChatService
from taverna.services.connections.service import ConnectionService
from taverna.services.turns import GenerationService, TurnRequest
from taverna.store.sql import SqlStore
from taverna.store.testing import temporary_store
from tests.services.test_generation import simple_builder
from tests.stubs import Reply, StubServer, start_stub

OWNER = "account-of-alice"


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with start_stub() as server:
        yield server


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqlStore]:
    with temporary_store("sqlite", tmp_path) as found:
        yield found


def _service(store: SqlStore, tmp_path: Path) -> GenerationService:
    # A server's service acts for nobody in particular: its owner is "".
    turns: list[TurnRequest] = []
    return GenerationService(
        store, ConnectionService(store, tmp_path), simple_builder(turns), chats=ChatService(store)
    )


def test_a_run_shares_its_chats_owner_for_whoever_adopts_it(
    store: SqlStore, stub: StubServer, tmp_path: Path
) -> None:
    service = _service(store, tmp_path)
    service.connections.of(OWNER).add(
        "stub", "openai", url=stub.base_url("openai"), model="stub-model", default=True
    )
    chat = service.chats.create_chat(
        "Aria", characters=[CharacterRef("Aria")], greetings=["Welcome."], owner=OWNER
    ).chat
    stub.script(Reply(tokens=["Hi."]))

    async def main() -> dict[str, object]:
        run = await service.send(chat.id, "Hello")
        await run.wait()
        return dict(run.draft_info)

    assert asyncio.run(main())["owner"] == OWNER


@pytest.mark.parametrize("said", ["", OWNER])
def test_an_orphans_draft_is_the_chats_owners(store: SqlStore, tmp_path: Path, said: str) -> None:
    """The meta of a run shared before it held the owner says "": the chat says whose."""
    service = _service(store, tmp_path)
    chat = service.chats.create_chat("Aria", characters=[CharacterRef("Aria")], owner=OWNER).chat
    meta = {"chat_id": chat.id, "owner": said, "kind": "normal", "generation_id": "g1"}
    draft_id = service.keep_orphan(meta, "half a reply")
    drafts = service.drafts(chat.id)
    assert [d.id for d in drafts] == [draft_id]
    assert drafts[0].text == "half a reply"
    assert drafts[0].reason == "the server stopped while it streamed"
    assert store.get_document(draft_id or "").owner == OWNER
