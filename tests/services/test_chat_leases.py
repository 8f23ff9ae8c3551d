"""A chat's lease in the database: held while its run streams in a live process, refused to
a second run meanwhile, free once the run ends or its process stops beating; its writes
leave what is kept of the library as it is."""

from __future__ import annotations

import pytest

from taverna.errors import Conflict
from taverna.services.turns.leases import BEAT_LASTS, ChatLeases
from taverna.store.sql import SqlStore


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_lease_keeps_the_chat_busy_while_its_process_beats(store: SqlStore) -> None:
    clock = Clock()
    running = {"run-1"}
    a = ChatLeases(store, "worker-a", running.__contains__, clock=clock)
    b = ChatLeases(store, "worker-b", lambda run: False, clock=clock)
    a.beat()
    b.beat()
    a.take("chat-1", "run-1")
    with pytest.raises(Conflict):
        b.take("chat-1", "run-2")  # another process: refused while a beats
    assert b.holder("chat-1") == ("run-1", "worker-a")
    b.take("chat-2", "run-3")  # another chat is free
    # a beats no more (killed): once its heartbeat lapses, the chat is free
    clock.now += BEAT_LASTS + 1
    b.beat()
    assert b.holder("chat-1") is None
    b.take("chat-1", "run-4")
    with pytest.raises(Conflict):
        ChatLeases(store, "worker-c", lambda run: False, clock=clock).take("chat-1", "run-5")


def test_a_finished_run_frees_its_chat(store: SqlStore) -> None:
    running = {"run-1"}
    a = ChatLeases(store, "worker-a", running.__contains__)
    b = ChatLeases(store, "worker-b", lambda run: True)
    a.beat()
    b.beat()
    a.take("chat-1", "run-1")
    with pytest.raises(Conflict):
        a.take("chat-1", "run-2")  # its own process too, while the run streams
    running.clear()
    a.release("chat-1", "run-1")
    b.take("chat-1", "run-2")
    a.release("chat-1", "run-1")  # a late release leaves the new holder alone
    assert a.holder("chat-1") == ("run-2", "worker-b")


def test_lease_writes_tell_no_library_watcher(store: SqlStore) -> None:
    heard: list[int] = []
    store.watch_documents(lambda: heard.append(1))
    leases = ChatLeases(store, "worker-a", lambda run: True)
    leases.beat()
    leases.take("chat-1", "run-1")
    leases.release("chat-1", "run-1")
    assert heard == []
