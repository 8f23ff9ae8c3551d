"""A turn's two writes (the person's message, the model's reply) send few statements, and
what a write knows of the rows it read (from its first statement on) stays true as it
writes them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from taverna.errors import NotFound, StaleRevision
from taverna.model.chat import Branch, CharacterRef, ChatState, GenerationInfo, NodeRole
from taverna.services.chats.service import ChatService
from taverna.store.sql import SqlStore
from taverna.store.testing import counting_statements

# Statements of each write as sent (BEGIN included where the driver sends it as one):
# SQLite sends BEGIN IMMEDIATE; psycopg begins on its own. Before the statements were
# counted the message took 18 on SQLite and 15 on PostgreSQL, the reply 19 and 16; on
# PostgreSQL the writes whose results are not read then went as one statement (9 to 3);
# on SQLite a write resumes from what the last one left, with no claim (11 to 10).
MESSAGE = {"sqlite": 10, "postgresql": 3}
REPLY = {"sqlite": 10, "postgresql": 3}


def _chat(store: SqlStore) -> tuple[ChatService, str]:
    chats = ChatService(store)
    chat = chats.create_chat(
        "turns",
        characters=(CharacterRef("Seraphina"),),
        user_name="Ann",
        greetings=["Seraphina looks up."],
        greeting_speaker="Seraphina",
    ).chat
    return chats, chat.id


def test_a_turns_writes_send_few_statements(store: SqlStore) -> None:
    chats, chat_id = _chat(store)
    dialect = store.engine.dialect.name
    for turn in range(3):
        revision = chats.get_chat(chat_id).revision
        with counting_statements(store) as message:
            sent = chats.append(
                chat_id, NodeRole.USER, f"hello {turn}", revision=revision, speaker="Ann"
            )
        chat = sent.chat
        assert sent.node is not None
        now = datetime.now(UTC)
        with counting_statements(store) as reply:
            answered = chats.add_reply(
                chat_id,
                chat.active_leaf_id,
                f"Seraphina smiles {turn}.",
                revision=chat.revision,
                speaker="Seraphina",
                generation=GenerationInfo(provider="openai", started=now, finished=now),
                turn_state={"variables": {}, "timedWorldInfo": {}},
            )
        assert len(message) <= MESSAGE[dialect], message
        assert len(reply) <= REPLY[dialect], reply
        assert answered.node is not None and answered.node.parent_id == sent.node.id
    path = store.active_path(chat_id)
    assert [n.content for n in path.nodes][-2:] == ["hello 2", "Seraphina smiles 2."]
    assert path.nodes[-1].generation is not None
    assert path.nodes[-1].generation.started == now
    [main] = store.branches(chat_id)
    assert main.branch.head_id == path.nodes[-1].id


def test_a_branch_rewritten_in_a_write_has_the_head_set_after_it(store: SqlStore) -> None:
    chats, chat_id = _chat(store)
    chat = chats.get_chat(chat_id)
    greeting = chat.active_leaf_id
    assert chat.active_branch_id is not None and greeting is not None
    [main] = store.branches(chat_id)
    assert main.branch.head_id == greeting
    with store.write(chat_id, revision=chat.revision, label="rewrite") as w:
        w.put_branch(Branch(main.branch.id, chat_id, "renamed", None, main.branch.created))
        w.set_active(greeting)  # the head it had when the write began
    [branch] = store.branches(chat_id)
    assert (branch.branch.name, branch.branch.head_id) == ("renamed", greeting)
    with store.write(chat_id, revision=w.revision, label="undo") as w:
        w.undo()
    [branch] = store.branches(chat_id)
    assert (branch.branch.name, branch.branch.head_id) == ("main", greeting)


def test_two_choices_at_one_place_in_one_write(store: SqlStore) -> None:
    chats, chat_id = _chat(store)
    chat = chats.get_chat(chat_id)
    leaf = chat.active_leaf_id
    with store.write(chat_id, revision=chat.revision, label="two") as w:
        first = w.insert_node(leaf, NodeRole.USER, "first")
        second = w.insert_node(leaf, NodeRole.USER, "second")
        w.set_selection(leaf, first.id)
        w.set_selection(leaf, second.id)
        assert w.selection(leaf) == second.id
        w.set_active(second.id)
    assert [n.content for n in store.active_path(chat_id).nodes][-1] == "second"
    with store.write(chat_id, revision=w.revision, label="undo") as w:
        w.undo()
        assert w.selection(leaf) is None
        assert w.selections().get(leaf or "") is None


def test_state_recorded_in_a_write_is_inherited_below_in_it(store: SqlStore) -> None:
    chats, chat_id = _chat(store)
    chat = chats.get_chat(chat_id)
    leaf = chat.active_leaf_id
    assert leaf is not None
    with store.write(chat_id, revision=chat.revision, label="state") as w:
        assert w.state_at(leaf).variables == {}
        w.update_node(leaf, state=ChatState(variables={"x": 1}))
        assert w.state_at(leaf).variables == {"x": 1}
        below = w.insert_node(leaf, NodeRole.USER, "below")
        assert w.state_at(below.id).variables == {"x": 1}
        w.update_chat(base_state=ChatState(variables={"x": 0}))
        w.update_node(leaf, state=None)
        assert w.state_at(below.id).variables == {"x": 0}
        deeper = w.insert_node(below.id, NodeRole.USER, "deeper")
    assert store.state_at(chat_id, deeper.id).variables == {"x": 0}
    assert store.get_node(chat_id, deeper.id).depth == 2


def test_a_write_finds_no_message_of_another_chat(store: SqlStore) -> None:
    chats, chat_id = _chat(store)
    _, other_id = _chat(store)
    elsewhere = chats.get_chat(other_id).active_leaf_id
    assert elsewhere is not None
    revision = chats.get_chat(chat_id).revision
    with pytest.raises(NotFound), store.write(chat_id, revision=revision, label="x") as w:
        w.insert_node(elsewhere, NodeRole.USER, "lost")
    with pytest.raises(NotFound), store.write(chat_id, revision=revision, label="x") as w:
        w.state_at(elsewhere)


def test_a_new_operation_ends_redo_and_an_undo_does_not(store: SqlStore) -> None:
    chats, chat_id = _chat(store)
    revision = chats.get_chat(chat_id).revision
    for text in ("one", "two"):
        revision = chats.append(chat_id, NodeRole.USER, text, revision=revision).chat.revision
    revision = chats.undo(chat_id, revision=revision).chat.revision
    revision = chats.undo(chat_id, revision=revision).chat.revision
    revision = chats.redo(chat_id, revision=revision).chat.revision
    revision = chats.append(chat_id, NodeRole.USER, "three", revision=revision).chat.revision
    with pytest.raises(NotFound):
        chats.redo(chat_id, revision=revision)
    assert [n.content for n in store.active_path(chat_id).nodes][1:] == ["one", "three"]


def test_what_a_write_reads_sees_the_writes_held_before_it(store: SqlStore) -> None:
    chats, chat_id = _chat(store)
    chat = chats.get_chat(chat_id)
    leaf = chat.active_leaf_id
    assert leaf is not None
    with store.write(chat_id, revision=chat.revision, label="held") as w:
        node = w.insert_node(leaf, NodeRole.USER, "held")
        w.set_selection(leaf, node.id)
        w.set_active(node.id)
        assert [c.id for c in w.children(leaf)] == [node.id]
        assert w.selections()[leaf] == node.id
        assert [b.head_id for b in w.branches()] == [node.id]
        reply = w.insert_node(node.id, NodeRole.ASSISTANT, "first")
        w.update_node(reply.id, content="changed")  # a message whose insert was held
        # one choice written three times in a row
        w.set_selection(node.id, reply.id)
        w.set_selection(node.id, None)
        w.set_selection(node.id, reply.id)
        w.set_active(reply.id)
        w.update_chat(title="held title")
    assert store.get_chat(chat_id).title == "held title"
    path = store.active_path(chat_id).nodes
    assert [n.content for n in path][-2:] == ["held", "changed"]
    [main] = store.branches(chat_id)
    assert main.branch.head_id == reply.id
    with store.write(chat_id, revision=w.revision, label="undo") as w:
        w.undo()
    assert store.get_chat(chat_id).active_leaf_id == leaf
    assert [n.id for n in store.active_path(chat_id).nodes][-1] == leaf


def test_a_write_resumed_from_the_last_one_is_refused_once_the_chat_moved_on(
    store: SqlStore,
) -> None:
    chats, chat_id = _chat(store)
    revision = chats.get_chat(chat_id).revision
    revision = chats.append(chat_id, NodeRole.USER, "one", revision=revision).chat.revision
    # Another process (a store of its own on the same database) writes the chat meanwhile.
    elsewhere = SqlStore(store.engine, url=store.url, schema=store.schema)
    moved = ChatService(elsewhere).append(chat_id, NodeRole.USER, "two", revision=revision)
    with pytest.raises(StaleRevision):
        chats.append(chat_id, NodeRole.USER, "lost", revision=revision)
    assert [n.content for n in store.active_path(chat_id).nodes][-2:] == ["one", "two"]
    third = chats.append(chat_id, NodeRole.USER, "three", revision=moved.chat.revision)
    assert third.node is not None and moved.node is not None
    assert third.node.parent_id == moved.node.id and third.node.depth == moved.node.depth + 1
    # The other process's next write starts from the chat as it is now, not as it left it.
    after = ChatService(elsewhere).append(
        chat_id, NodeRole.USER, "four", revision=third.chat.revision
    )
    assert after.node is not None and after.node.parent_id == third.node.id
    [main] = store.branches(chat_id)
    assert main.branch.head_id == after.node.id
    with pytest.raises(StaleRevision):
        ChatService(elsewhere).append(chat_id, NodeRole.USER, "late", revision=moved.chat.revision)
    assert [n.content for n in store.active_path(chat_id).nodes][-4:] == [
        "one",
        "two",
        "three",
        "four",
    ]
