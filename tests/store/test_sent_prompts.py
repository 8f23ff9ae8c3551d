"""Sent-prompt records: one per reply, beside the tree, gone with their message or chat."""

from __future__ import annotations

import pytest

from taverna.errors import NotFound
from taverna.model.chat import NodeRole
from taverna.store import NewChat
from taverna.store.sql import SqlStore


def chat_with_reply(store: SqlStore) -> tuple[str, str]:
    chat = store.create_chat(NewChat(title="Harbour"))
    with store.write(chat.id, revision=chat.revision, label="turn") as w:
        asked = w.insert_node(None, NodeRole.USER, "Is the lamp lit?")
        reply = w.insert_node(asked.id, NodeRole.ASSISTANT, "It is.")
        w.set_selection(None, asked.id)
        w.set_selection(asked.id, reply.id)
        w.set_active(reply.id)
    return chat.id, reply.id


def test_a_record_is_kept_read_and_replaced(store: SqlStore) -> None:
    chat_id, reply_id = chat_with_reply(store)
    assert store.sent_prompt(chat_id, reply_id) is None
    record = bytes(range(256)) * 40  # compressed bytes: any byte value
    store.save_sent_prompt(chat_id, reply_id, record)
    assert store.sent_prompt(chat_id, reply_id) == record
    store.save_sent_prompt(chat_id, reply_id, b"newer")
    assert store.sent_prompt(chat_id, reply_id) == b"newer"


def test_a_record_needs_a_message_of_that_chat(store: SqlStore) -> None:
    chat_id, reply_id = chat_with_reply(store)
    other = store.create_chat(NewChat(title="Elsewhere"))
    with pytest.raises(NotFound):
        store.save_sent_prompt(chat_id, "no-such-message", b"x")
    with pytest.raises(NotFound):
        store.save_sent_prompt(other.id, reply_id, b"x")
    assert store.sent_prompt(other.id, reply_id) is None


def test_deleting_the_chat_deletes_its_records(store: SqlStore) -> None:
    chat_id, reply_id = chat_with_reply(store)
    store.save_sent_prompt(chat_id, reply_id, b"record")
    store.delete_chat(chat_id, revision=store.get_chat(chat_id).revision)
    assert store.sent_prompt(chat_id, reply_id) is None


def test_writing_the_chat_leaves_the_record_alone(store: SqlStore) -> None:
    chat_id, reply_id = chat_with_reply(store)
    store.save_sent_prompt(chat_id, reply_id, b"record")
    revision = store.get_chat(chat_id).revision
    with store.write(chat_id, revision=revision, label="edit") as w:
        w.update_node(reply_id, content="It is, now.")
    assert store.get_chat(chat_id).revision == revision + 1  # a record is no chat write
    assert store.sent_prompt(chat_id, reply_id) == b"record"
