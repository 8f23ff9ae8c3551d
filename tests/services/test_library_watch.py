"""What the work after each turn keeps of the stored settings is read again after any
write of the library: in this process, and (through Redis) in another."""

from __future__ import annotations

import asyncio
import os
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from taverna.model.summary import SummarySettings
from taverna.services.library.watch import Kept, LibraryWatch
from taverna.services.turns.shared_runs import SharedRegistry
from taverna.services.turns.summary_generation import save_summary_settings, summary_settings
from taverna.store.sql import SqlStore

REDIS = os.environ.get("TAVERNA_TEST_REDIS_URL", "")


class Reads:
    """The summary settings of the single user, counting how often they are read."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store
        self.count = 0

    def __call__(self) -> SummarySettings:
        self.count += 1
        return summary_settings(self.store)


def test_an_answer_is_kept_until_a_document_is_written_or_removed(store: SqlStore) -> None:
    kept: Kept[str, SummarySettings] = Kept(LibraryWatch().watch(store))
    reads = Reads(store)
    assert kept.get("", reads).prompt_interval == SummarySettings().prompt_interval
    kept.get("", reads)
    assert reads.count == 1  # nothing written: no database work
    save_summary_settings(store, replace(SummarySettings(), prompt_interval=7))
    assert kept.get("", reads).prompt_interval == 7
    assert reads.count == 2
    (doc,) = store.find_documents("settings")
    store.delete_document(doc.id, revision=doc.revision)
    assert kept.get("", reads) == SummarySettings()
    assert reads.count == 3


def test_an_answer_read_while_a_write_is_counted_is_not_kept() -> None:
    watch = LibraryWatch()
    kept: Kept[str, int] = Kept(watch)
    seen = iter([1, 2])

    def read_during_a_write() -> int:
        value = next(seen)
        watch.written()  # committed while this answer was being read
        return value

    assert kept.get("k", read_during_a_write) == 1
    assert kept.get("k", lambda: 3) == 3  # the first answer was stale: read again
    assert kept.get("k", lambda: 4) == 3


def test_every_answer_is_read_again_after_the_recheck_time() -> None:
    now = [100.0]
    kept: Kept[str, int] = Kept(LibraryWatch(recheck=60.0, clock=lambda: now[0]))
    assert kept.get("k", lambda: 1) == 1
    now[0] += 59.0
    assert kept.get("k", lambda: 2) == 1
    now[0] += 1.0
    assert kept.get("k", lambda: 3) == 3


def test_a_write_in_one_process_is_announced_to_the_others(
    store: SqlStore,
) -> None:
    if not REDIS:
        pytest.skip("needs Redis: set TAVERNA_TEST_REDIS_URL")

    async def go() -> None:
        prefix = f"test-{uuid.uuid4().hex[:12]}:"
        here, there = SharedRegistry(REDIS, prefix=prefix), SharedRegistry(REDIS, prefix=prefix)
        # each process watches its own store object (one database): here writes, there reads
        writer = LibraryWatch().watch(store)
        writer.announce = here.documents_changed
        reader_watch = LibraryWatch()  # not told of `store`'s writes but through Redis
        there.on_documents = reader_watch.heard
        here.on_documents = writer.heard
        kept: Kept[str, SummarySettings] = Kept(reader_watch)
        await here.open()
        await there.open()
        try:
            for _ in range(200):  # both listen (each counts a change when it starts)
                if writer.epoch and reader_watch.epoch:
                    break
                await asyncio.sleep(0.05)
            assert writer.epoch == reader_watch.epoch == 1
            assert kept.get("", lambda: summary_settings(store)).prompt_interval == (
                SummarySettings().prompt_interval
            )
            epoch = writer.epoch
            save_summary_settings(store, replace(SummarySettings(), prompt_interval=9))
            assert writer.epoch == epoch + 1  # its own write, counted once (not heard back)
            for _ in range(100):
                if kept.get("", lambda: summary_settings(store)).prompt_interval == 9:
                    break
                await asyncio.sleep(0.05)
            assert kept.get("", lambda: summary_settings(store)).prompt_interval == 9
            assert writer.epoch == epoch + 1
        finally:
            await here.close()
            await there.close()

    asyncio.run(go())


def test_listening_again_after_redis_was_away_reads_everything_again() -> None:
    if not REDIS:
        pytest.skip("needs Redis: set TAVERNA_TEST_REDIS_URL")

    async def go() -> None:
        registry = SharedRegistry(REDIS, prefix=f"test-{uuid.uuid4().hex[:12]}:")
        watch = LibraryWatch()
        registry.on_documents = watch.heard
        await registry.open()
        try:
            for _ in range(100):
                if watch.epoch:
                    break
                await asyncio.sleep(0.05)
            assert watch.epoch == 1  # what was announced before it listened is not trusted
        finally:
            await registry.close()

    asyncio.run(go())


def test_automatic_summaries_turned_on_are_seen_by_the_next_reply(tmp_path: Path) -> None:
    from taverna.model.chat import CharacterRef
    from taverna.services.house.workspace import open_workspace

    ws = open_workspace(tmp_path / "data", background_backups=False, plugins=False)
    try:
        chat_id = ws.chats.create_chat(
            "Aria", characters=[CharacterRef("Aria")], greetings=["Hi."], greeting_speaker="Aria"
        ).chat.id
        assert ws.summaries is not None
        off = asyncio.run(ws.summaries.after_reply(chat_id))
        assert off.skipped == "automatic summaries are off"
        save_summary_settings(ws.store, replace(SummarySettings(), prompt_interval=50))
        on = asyncio.run(ws.summaries.after_reply(chat_id))
        assert on.skipped == "not due"
        save_summary_settings(ws.store, replace(SummarySettings(), prompt_interval=0))
        assert asyncio.run(ws.summaries.after_reply(chat_id)).skipped == off.skipped
    finally:
        ws.close()
