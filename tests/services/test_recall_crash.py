"""Kill -9 during an embedding backlog: nothing saved is lost or half-written, and the
backlog resumes where it stopped (what was saved is not embedded again)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from taverna.model.chat import NodeRole
from taverna.providers.embeddings import LOCAL_MODEL, LocalEmbedder
from taverna.services.memory.recall import EmbeddingBacklog
from taverna.store import NewChat
from taverna.store.sql import open_store

pytestmark = pytest.mark.skipif(
    not LocalEmbedder.available(), reason="the local embedding model is not installed"
)

MESSAGES = 600
EMBEDDER = """
import sys
from taverna.providers.embeddings import LocalEmbedder
from taverna.services.memory.recall.backlog import embed_due
from taverna.store.sql import open_store

store = open_store(sys.argv[1])
embedder = LocalEmbedder()
while True:
    done = embed_due(store, embedder, batch=16)
    print(done, flush=True)
    if not done:
        break
"""


def _long_chat(folder: Path) -> str:
    store = open_store(folder)
    try:
        chat = store.create_chat(NewChat(title="long"))
        with store.write(chat.id, revision=chat.revision, label="import") as w:
            parent = None
            for i in range(MESSAGES):
                role = NodeRole.USER if i % 2 == 0 else NodeRole.ASSISTANT
                node = w.insert_node(parent, role, f"Message {i}: the caravan reaches well {i}.")
                w.set_selection(parent, node.id)
                parent = node.id
            w.set_active(parent)
        return chat.id
    finally:
        store.close()


def test_kill_during_the_backlog_loses_nothing_and_it_resumes(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    chat_id = _long_chat(folder)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen(
        [sys.executable, "-c", EMBEDDER, str(folder)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    batches = 0
    deadline = time.monotonic() + 120
    while batches < 3 and time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        batches += 1
    assert batches == 3, "the backlog made progress before the kill"
    time.sleep(0.05)  # land inside the next batch
    os.kill(process.pid, signal.SIGKILL)
    process.wait()

    store = open_store(folder)
    try:
        saved = store.message_vectors(chat_id, LOCAL_MODEL)
        assert 3 * 16 <= len(saved) < MESSAGES
        assert all(len(v.vector) == 512 * 4 for v in saved)
        assert len({v.node_id for v in saved}) == len(saved)
        before = {v.node_id: v.seq for v in saved}
        due = store.messages_due(LOCAL_MODEL, limit=MESSAGES)
        assert len(due) == MESSAGES - len(saved)
        assert not {d.node_id for d in due} & set(before)

        resumed = EmbeddingBacklog(store, LocalEmbedder).drain()
        assert resumed == MESSAGES - len(saved)
        after = {v.node_id: v.seq for v in store.message_vectors(chat_id, LOCAL_MODEL)}
        assert len(after) == MESSAGES
        assert all(after[node] == seq for node, seq in before.items())
        assert store.messages_due(LOCAL_MODEL, limit=10) == []
    finally:
        store.close()
