"""What a turn reads from the store: a path's tail, the nodes changed since a revision,
document versions and stored token counts (SQLite and, when configured, PostgreSQL)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from taverna.model.chat import ChatState, GenerationInfo, Node, NodeRole
from taverna.store import NewChat
from taverna.store.sql import SqlStore


def _append(store: SqlStore, chat_id: str, text: str, role: NodeRole = NodeRole.USER) -> Node:
    chat = store.get_chat(chat_id)
    with store.write(chat_id, revision=chat.revision, label="append") as w:
        parent = w.chat.active_leaf_id
        node = w.insert_node(parent, role, text)
        w.set_selection(parent, node.id)
        w.set_active(node.id)
    return node


def _chat_of(store: SqlStore, count: int) -> tuple[str, list[Node]]:
    chat = store.create_chat(NewChat(title="t", base_state=ChatState(variables={"x": 0})))
    nodes = [
        _append(store, chat.id, f"m{i}", NodeRole.USER if i % 2 == 0 else NodeRole.ASSISTANT)
        for i in range(count)
    ]
    return chat.id, nodes


def test_path_tail_reads_only_the_last_live_messages(store: SqlStore) -> None:
    chat_id, nodes = _chat_of(store, 12)
    tail = store.path_tail(chat_id, nodes[-1].id, limit=5)
    assert [n.content for n in tail.nodes] == ["m7", "m8", "m9", "m10", "m11"]
    assert tail.before == 7
    assert tail.state.variables == {"x": 0}
    # a tail ending above the leaf; a limit past the root gives the whole path
    assert [n.content for n in store.path_tail(chat_id, nodes[3].id, limit=2).nodes] == [
        "m2",
        "m3",
    ]
    whole = store.path_tail(chat_id, nodes[-1].id, limit=100)
    assert len(whole.nodes) == 12 and whole.before == 0


def test_path_tail_nodes_share_what_repeats_from_node_to_node(store: SqlStore) -> None:
    """A turn's path end is kept between turns: its nodes hold one object of each string
    that repeats (the chat's id, each parent's id, a speaker's name, the keys and short
    values of their extras and generation records), not a copy each, with the same values."""
    chat = store.create_chat(NewChat(title="t"))
    with store.write(chat.id, revision=chat.revision, label="append") as w:
        parent = None
        for i in range(8):
            mine = i % 2 == 0
            node = w.insert_node(
                parent,
                NodeRole.USER if mine else NodeRole.ASSISTANT,
                f"m{i}",
                speaker="Ann" if mine else "Bo",
                extras={"send_date": f"2026-01-01T00:0{i}:00Z", "_st": {"order": ["name", "mes"]}}
                if i < 4
                else None,
                generation=None if mine else GenerationInfo(provider="openai", model="gpt-4o"),
            )
            w.set_selection(parent, node.id)
            parent = node.id
        w.set_active(parent)
    tail = store.path_tail(chat.id, parent, limit=8).nodes
    assert tail == tuple(store.get_nodes(chat.id, [n.id for n in tail]))  # the same values
    assert len({id(n.chat_id) for n in tail}) == 1
    assert all(b.parent_id is a.id for a, b in itertools.pairwise(tail))
    assert len({id(n.speaker) for n in tail if n.speaker == "Bo"}) == 1
    listed = [n.extras for n in tail[:4]]
    assert len({id(k) for e in listed for k in e if k == "send_date"}) == 1
    assert len({id(e["_st"]["order"][1]) for e in listed}) == 1
    assert len({id(n.extras) for n in tail[4:]}) == 1  # one empty mapping
    assert len({id(n.generation.model) for n in tail if n.generation is not None}) == 1


def test_path_tail_skips_deleted_messages_and_counts_live_ones_above(store: SqlStore) -> None:
    chat_id, nodes = _chat_of(store, 10)
    chat = store.get_chat(chat_id)
    with store.write(chat_id, revision=chat.revision, label="delete") as w:
        w.update_node(nodes[1].id, deleted=True)
        w.update_node(nodes[8].id, deleted=True)
    tail = store.path_tail(chat_id, nodes[-1].id, limit=3)
    assert [n.content for n in tail.nodes] == ["m6", "m7", "m9"]
    assert tail.before == 5  # m0 m2 m3 m4 m5
    assert tail.visible_before == 5


def test_path_tail_counts_hidden_messages_above_and_user_messages(store: SqlStore) -> None:
    chat_id, nodes = _chat_of(store, 10)
    chat = store.get_chat(chat_id)
    with store.write(chat_id, revision=chat.revision, label="hide") as w:
        for index in (0, 2, 3, 8):
            w.update_node(nodes[index].id, hidden=True)
        w.update_node(nodes[4].id, deleted=True)
    tail = store.path_tail(chat_id, nodes[-1].id, limit=3)
    assert [n.content for n in tail.nodes] == ["m7", "m8", "m9"]
    assert (tail.before, tail.visible_before) == (6, 3)  # m0-m6 less m4; m1 m5 m6 shown
    assert store.user_messages_to(chat_id, nodes[-1].id) == 4  # m0 m2 m6 m8 (m4 deleted)


def test_path_tail_reads_state_recorded_above_the_tail(store: SqlStore) -> None:
    chat_id, nodes = _chat_of(store, 8)
    chat = store.get_chat(chat_id)
    with store.write(chat_id, revision=chat.revision, label="state") as w:
        w.update_node(nodes[1].id, state=ChatState(variables={"x": 5}))
    assert store.path_tail(chat_id, nodes[-1].id, limit=2).state.variables == {"x": 5}


def test_changed_nodes_names_writes_and_what_undo_restores(store: SqlStore) -> None:
    chat_id, nodes = _chat_of(store, 4)
    since = store.get_chat(chat_id).revision
    assert store.changed_nodes(chat_id, since) == frozenset()
    with store.write(chat_id, revision=since, label="edit") as w:
        w.update_node(nodes[1].id, content="edited")
    assert store.changed_nodes(chat_id, since) == {nodes[1].id}
    after_edit = store.get_chat(chat_id).revision
    with store.write(chat_id, revision=after_edit, label="undo") as w:
        w.undo()
    assert store.changed_nodes(chat_id, after_edit) == {nodes[1].id}
    fresh = _append(store, chat_id, "new")
    assert fresh.id in store.changed_nodes(chat_id, after_edit)
    assert {n.id for n in store.get_nodes(chat_id, [nodes[0].id, fresh.id, "nope"])} == {
        nodes[0].id,
        fresh.id,
    }


def test_document_versions_read_no_data(store: SqlStore) -> None:
    first = store.put_document("lorebook", "Alpha", {"entries": {}})
    store.put_document("lorebook", "Beta", {"entries": {}})
    store.put_document("preset", "Alpha", {})
    found = store.document_versions("lorebook")
    assert [v.name for v in found] == ["Alpha", "Beta"]
    assert store.document_versions("lorebook", names=["Alpha", "Gamma"])[0].id == first.id
    assert store.document_versions("lorebook", names=[]) == []
    assert [v.name for v in store.document_versions("lorebook", ids=[first.id])] == ["Alpha"]
    again = store.put_document("lorebook", "Alpha", {"entries": {"0": {}}}, id=first.id, revision=1)
    assert store.document_versions("lorebook", names=["Alpha"])[0].revision == again.revision


def test_token_counts_are_kept_per_tokenizer_for_stored_texts(store: SqlStore) -> None:
    chat_id, _ = _chat_of(store, 2)
    store.save_token_counts("o200k", {"m0": 3, "m1": 4, "never stored": 9})
    store.save_token_counts("o200k", {"m0": 3})  # again: harmless
    assert store.token_counts("o200k", ["m0", "m1", "never stored"]) == {"m0": 3, "m1": 4}
    assert store.token_counts("llama3", ["m0"]) == {}
    # a count goes with its text
    store.delete_chat(chat_id, revision=store.get_chat(chat_id).revision)
    assert store.token_counts("o200k", ["m0"]) == {}


def test_versions_of_kinds_ids_and_names_in_one_query(store: SqlStore) -> None:
    card = store.put_document("character", "Ann", {})
    store.put_document("character", "Bob", {})
    store.put_document("persona", "Me", {})
    store.put_document("lorebook", "Lore", {"entries": {}})
    store.put_document("lorebook", "Other", {"entries": {}})
    found = store.versions_of(
        owner="", kinds=["persona"], ids=[card.id], names={"lorebook": ["Lore"]}
    )
    assert sorted((v.kind, v.name) for v in found) == [
        ("character", "Ann"),
        ("lorebook", "Lore"),
        ("persona", "Me"),
    ]
    assert store.versions_of(owner="") == []
    assert store.versions_of(owner="someone else", kinds=["persona"]) == []


def test_document_versions_are_read_from_the_index_alone(tmp_path: Path) -> None:
    """A turn's look at the versions must not read the rows: in SQLite a big lorebook's
    revision sits after its text, and reading it walks every page of that text."""
    from taverna.store.sql import open_store

    store = open_store(tmp_path / "data")
    try:
        book = store.put_document("lorebook", "Big", {"entries": {}})
        seen: list[tuple[str, Any]] = []

        def note(conn: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
            seen.append((statement, parameters))

        sa.event.listen(store.engine, "before_cursor_execute", note)
        try:
            store.versions_of(
                owner="", kinds=("settings", "persona"), ids=[book.id], names={"lorebook": ["Big"]}
            )
        finally:
            sa.event.remove(store.engine, "before_cursor_execute", note)
        statement, parameters = next(s for s in seen if "FROM documents" in s[0])
        with store.engine.connect() as conn:
            plan = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters).all()
        steps = " / ".join(str(row[-1]) for row in plan)
        assert "documents" in steps and "COVERING INDEX" in steps, steps
    finally:
        store.close()
