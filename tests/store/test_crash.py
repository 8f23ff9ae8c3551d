"""Kill -9 in the middle of writes: the store reopens at the last committed revision."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from taverna.model.chat import NodeRole
from taverna.store import NewChat
from taverna.store import schema as t
from taverna.store.sql import SqlStore, open_store

# Each unit of work writes a chain of 20 large messages, so a kill lands inside one.
WRITER = """
import sys
from taverna.model.chat import NodeRole
from taverna.store.sql import open_store

target, schema, chat_id = sys.argv[1], sys.argv[2] or None, sys.argv[3]
store = open_store(target, schema=schema)
revision = store.get_chat(chat_id).revision
text = "x" * 20000
while True:
    with store.write(chat_id, revision=revision, label="burst") as w:
        parent = w.chat.active_leaf_id
        for i in range(20):
            node = w.insert_node(parent, NodeRole.USER, f"{revision}:{i}:{text}")
            w.set_selection(parent, node.id)
            parent = node.id
        w.set_active(parent)
    revision += 1
    print(revision, flush=True)
"""


def _writer_target(store: SqlStore) -> tuple[str, str]:
    if store.url.startswith("sqlite"):
        return store.url, ""
    with store.engine.connect() as conn:
        schema = conn.exec_driver_sql("SELECT current_schema()").scalar()
    return store.url, str(schema)


def _check_consistent(store: SqlStore, chat_id: str, committed: int) -> None:
    chat = store.get_chat(chat_id)
    # The unit in flight may have committed just before the kill, never partly.
    assert chat.revision in (committed, committed + 1)
    with store.engine.connect() as conn:
        newest = conn.execute(
            sa.select(sa.func.max(t.revisions.c.number)).where(t.revisions.c.chat_id == chat_id)
        ).scalar()
        assert newest == chat.revision
        node_count = conn.execute(
            sa.select(sa.func.count()).where(t.nodes.c.chat_id == chat_id)
        ).scalar()
        assert node_count == 20 * (chat.revision - 1)
        orphans = conn.execute(
            sa.text(
                "SELECT COUNT(*) FROM nodes n WHERE n.parent_id <> '' AND NOT EXISTS "
                "(SELECT 1 FROM nodes p WHERE p.id = n.parent_id)"
            )
        ).scalar()
        assert orphans == 0
        if store.url.startswith("sqlite"):
            assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
    path = store.active_path(chat_id)
    assert len(path.entries) == 20 * (chat.revision - 1)
    if path.entries:
        assert path.entries[-1].node.content.startswith(f"{chat.revision - 1}:19:")


@pytest.mark.timeout(120)
def test_kill_during_writes_leaves_the_last_committed_revision(
    store: SqlStore, tmp_path: Path
) -> None:
    chat = store.create_chat(NewChat(title="crash"))
    target, schema = _writer_target(store)
    rng = random.Random(7)
    env = dict(os.environ)
    for _ in range(3):
        child = subprocess.Popen(
            [sys.executable, "-c", WRITER, target, schema, chat.id],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert child.stdout is not None
        committed = store.get_chat(chat.id).revision
        for _ in range(rng.randint(2, 5)):
            line = child.stdout.readline()
            assert line, child.stderr.read() if child.stderr else "writer died"
            committed = int(line)
        time.sleep(rng.uniform(0.0, 0.05))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        for line in child.stdout.read().split():
            committed = int(line)
        child.stdout.close()
        if child.stderr:
            child.stderr.close()
        if store.url.startswith("sqlite"):
            reopened = open_store(target)
            try:
                _check_consistent(reopened, chat.id, committed)
            finally:
                reopened.close()
        else:
            _check_consistent(store, chat.id, committed)
    # and the chat goes on
    with store.write(chat.id, revision=store.get_chat(chat.id).revision, label="after") as w:
        node = w.insert_node(w.chat.active_leaf_id, NodeRole.USER, "still here")
        w.set_active(node.id)
    assert store.active_path(chat.id).leaf.content == "still here"  # type: ignore[union-attr]
