"""The reply journal: a finished reply the database cannot take waits on local disk, the
generation says it is being saved, and the reply lands in its chat once the database
answers again; a dead process's journal is moved by the next one."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from taverna.model.chat import CharacterRef
from taverna.services.chats.service import ChatService
from taverna.services.connections.service import ConnectionService
from taverna.services.turns import Ending, GenerationService
from taverna.services.turns.journal import ReplyJournal, Unsettled
from taverna.store.testing import backends, temporary_store
from tests.services.test_generation import KEY, simple_builder
from tests.stubs import Reply, StubServer

pytestmark = pytest.mark.stub_model(key=KEY)


def _away(*args: Any, **kwargs: Any) -> Any:
    raise sa.exc.OperationalError("INSERT", {}, Exception("server closed the connection"))


@pytest.mark.parametrize("backend", backends())
def test_a_reply_the_database_refuses_waits_in_the_journal_until_it_answers(
    backend: str, tmp_path: Path, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with temporary_store(backend, tmp_path) as store:
        connections = ConnectionService(store, tmp_path)
        connections.add("stub", "openai", url=stub.base_url("openai"), model="stub-model", key=KEY)
        chats = ChatService(store)
        journal = ReplyJournal(tmp_path / "journal")
        service = GenerationService(
            store, connections, simple_builder([]), chats=chats, journal=journal
        )
        chat = chats.create_chat("Aria", characters=[CharacterRef("Aria")], user_name="Alex").chat
        stub.script(Reply(tokens=["Kept", " on", " disk."]))
        real = chats.add_reply
        monkeypatch.setattr(chats, "add_reply", _away)  # the database goes away at the save

        async def main() -> Any:
            run = await service.send(chat.id, "Hello")
            return await run.wait()

        done = asyncio.run(main())
        assert done.outcome is Ending.SAVING
        assert done.text == "Kept on disk."
        # acknowledged: on disk, fsync'd, before the run ended
        waiting = journal.pending(chat.id)
        assert [e["text"] for e in waiting] == ["Kept on disk."]
        assert service.drafts(chat.id) == []
        path = [n.content for n in store.active_path(chat.id).nodes]
        assert path == ["Hello"]
        # still away: nothing moves, nothing is lost
        assert service.replay_journal() == (0, 1)
        monkeypatch.setattr(chats, "add_reply", real)  # it answers again
        assert service.waiting(chat.id) == []  # a page's look moves it at once
        path = [n.content for n in store.active_path(chat.id).nodes]
        assert path == ["Hello", "Kept on disk."]
        reply = store.active_path(chat.id).nodes[-1]
        assert reply.generation is not None and reply.generation.model == "stub-model"
        assert service.replay_journal() == (0, 0)  # moved once, never twice
        assert len(store.active_path(chat.id).nodes) == 2
        journal.close()
        assert list((tmp_path / "journal").glob("*.jsonl")) == []


def test_a_dead_processes_journal_is_moved_by_the_next_and_a_live_ones_is_left(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "journal"
    live, other = ReplyJournal(folder), ReplyJournal(folder)
    live.write("reply", {"chat_id": "c1", "text": "of a live process"})
    other.write("reply", {"chat_id": "c2", "text": "of a dead process"})
    other.close()  # its process died: the lock goes with it, the file stays
    moved: list[str] = []
    third = ReplyJournal(folder)
    assert third.has_pending()
    assert third.replay(lambda entry: moved.append(entry["text"])) == (1, 0)
    assert moved == ["of a dead process"]  # the live one's is its own to move
    assert [e["text"] for e in third.pending()] == ["of a live process"]
    assert live.replay(lambda entry: moved.append(entry["text"])) == (1, 0)
    assert third.pending() == []


def test_an_entry_that_cannot_be_moved_yet_waits_with_those_after_it(tmp_path: Path) -> None:
    journal = ReplyJournal(tmp_path)
    for text in ("first", "second"):
        journal.write("reply", {"chat_id": "c", "text": text})

    def away(entry: dict[str, Any]) -> None:
        raise Unsettled("the database is still away")

    assert journal.replay(away) == (0, 2)
    moved: list[str] = []
    assert journal.replay(lambda entry: moved.append(entry["text"])) == (2, 0)
    assert moved == ["first", "second"]  # in order


def test_a_line_torn_by_a_kill_is_skipped_and_the_rest_kept(tmp_path: Path) -> None:
    journal = ReplyJournal(tmp_path)
    journal.write("reply", {"chat_id": "c", "text": "whole"})
    journal.close()
    path = next(tmp_path.glob("*.jsonl"))
    with path.open("ab") as handle:
        handle.write(b'{"id": "torn", "op": "reply", "te')  # killed mid-write
    moved: list[str] = []
    assert ReplyJournal(tmp_path).replay(lambda entry: moved.append(entry["text"])) == (1, 0)
    assert moved == ["whole"]
    assert not path.exists()


def test_entries_are_json_lines_a_person_can_read(tmp_path: Path) -> None:
    journal = ReplyJournal(tmp_path)
    entry_id = journal.write("draft", {"chat_id": "c", "text": "héllo"})
    lines = journal.path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {"chat_id": "c", "text": "héllo", "id": entry_id, "op": "draft"}
