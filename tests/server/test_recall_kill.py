"""A `taverna serve` process killed (SIGKILL) in the middle of its embedding backlog: every
vector it saved is whole and kept, none is half-written, and the next start of the server
embeds the rest without embedding again what was saved."""

from __future__ import annotations

import time
from pathlib import Path

from taverna.model.chat import Node, NodeRole, new_id
from taverna.store import NewChat
from taverna.store.sql import open_store
from tests.stubs.embeddings_server import DIMS, embeddings_stub
from tests.stubs.taverna_server import TavernaServer

MESSAGES = 600
MODEL = "openai:slow"
BATCH = 32  # the backlog's batch (taverna.services.memory.recall.backlog.BACKLOG_BATCH)


def _long_chat(folder: Path) -> str:
    store = open_store(folder)
    try:
        nodes: list[Node] = []
        for i in range(MESSAGES):
            role = NodeRole.USER if i % 2 == 0 else NodeRole.ASSISTANT
            parent = nodes[-1].id if nodes else None
            nodes.append(Node(new_id(), "", parent, role, f"Message {i}: the caravan at well {i}."))
        chat = store.import_tree(NewChat(title="long"), nodes, active_leaf_id=nodes[-1].id)
        return chat.id
    finally:
        store.close()


def test_a_server_killed_during_its_backlog_loses_nothing_and_resumes(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    chat_id = _long_chat(folder)
    with embeddings_stub(delay=0.2) as stub:
        server = TavernaServer(folder, tmp_path / "serve.log", env={"TAVERNA_NO_PLUGINS": "1"})
        server.start()
        reader = open_store(folder)
        try:
            server.api(
                "PUT",
                "/recall-settings",
                json={
                    "enabled_chats": True,
                    "source": "openai",
                    "alt_endpoint_url": stub.url,
                    "openai_model": "slow",
                },
            )
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if len(reader.message_vectors(chat_id, MODEL)) >= 2 * BATCH:
                    break
                time.sleep(0.02)
            server.kill()
            asked_before = len(stub.requests)

            saved = reader.message_vectors(chat_id, MODEL)
            assert 2 * BATCH <= len(saved) < MESSAGES, "killed in the middle of the backlog"
            assert all(len(v.vector) == DIMS * 4 for v in saved)
            assert len({v.node_id for v in saved}) == len(saved)
            before = {v.node_id: v.seq for v in saved}
            due = reader.messages_due(MODEL, limit=MESSAGES)
            assert len(due) == MESSAGES - len(saved)
            assert not {d.node_id for d in due} & set(before)
            saved_texts = {n.content for n in reader.get_nodes(chat_id, list(before))}

            server.start()  # the settings are stored: the backlog resumes by itself
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if len(reader.message_vectors(chat_id, MODEL)) == MESSAGES:
                    break
                time.sleep(0.1)
            after = {v.node_id: v.seq for v in reader.message_vectors(chat_id, MODEL)}
            assert len(after) == MESSAGES
            assert all(after[node] == seq for node, seq in before.items())
            assert reader.messages_due(MODEL, limit=10) == []
            with stub.lock:
                asked_after = {t for _, texts in stub.requests[asked_before:] for t in texts}
            assert not asked_after & saved_texts, "what was saved is not embedded again"
        finally:
            server.stop()
            reader.close()
