"""Text with U+0000 (and the escape character itself) is stored and read back as it was,
everywhere text enters the store, on SQLite and PostgreSQL alike."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from taverna.model.chat import (
    Branch,
    CharacterRef,
    ChatState,
    Checkpoint,
    GenerationInfo,
    Node,
    NodeRole,
    new_id,
)
from taverna.store import NewChat
from taverna.store.sql import SqlStore
from taverna.store.sql.postgres_text import ESC, dumps, escape, loads, unescape

# U+0000, the escape character alone and before a "0", and text that only looks escaped.
ODD = f"a\x00b {ESC} c{ESC}0 d\\u0000 e\x00"


def test_a_chat_and_its_messages_keep_every_character(store: SqlStore) -> None:
    chat = store.create_chat(
        NewChat(
            title=f"Title {ODD}",
            characters=(CharacterRef(f"Ann {ODD}"),),
            user_name=f"Me {ODD}",
            metadata={f"key {ODD}": [ODD, {ODD: ODD}]},
            base_state=ChatState(variables={ODD: ODD}),
        )
    )
    with store.write(chat.id, revision=chat.revision, label=f"append {ODD}") as w:
        node = w.insert_node(
            None,
            NodeRole.ASSISTANT,
            f"Hello {ODD}",
            speaker=f"Ann {ODD}",
            extras={ODD: ODD},
            generation=GenerationInfo(model=ODD, extras={"reasoning": ODD}),
            state=ChatState(variables={"x": ODD}),
        )
        w.set_selection(None, node.id)
        w.set_active(node.id)
        w.put_branch(Branch(new_id(), chat.id, f"branch {ODD}", node.id))
        w.put_checkpoint(Checkpoint(new_id(), chat.id, f"mark {ODD}", node.id))
    with store.write(chat.id, revision=chat.revision + 1, label="edit") as w:
        w.update_node(node.id, content=f"Edited {ODD}")
    read = store.get_chat(chat.id)
    assert (read.title, read.user_name) == (f"Title {ODD}", f"Me {ODD}")
    assert read.characters[0].name == f"Ann {ODD}"
    assert read.metadata == {f"key {ODD}": [ODD, {ODD: ODD}]}
    assert read.base_state.variables == {ODD: ODD}
    for found in (
        store.active_path(chat.id).nodes[0],
        store.path_tail(chat.id, node.id, limit=3).nodes[0],
        store.get_node(chat.id, node.id),
        store.get_nodes(chat.id, [node.id])[0],
        store.tree(chat.id).nodes[0],
    ):
        assert found.content == f"Edited {ODD}"
        assert found.speaker == f"Ann {ODD}"
        assert found.extras == {ODD: ODD}
        assert found.generation is not None and found.generation.model == ODD
        assert found.state is not None and found.state.variables == {"x": ODD}
    history = [v.content for v in store.content_history(chat.id, node.id)]
    assert history == [f"Hello {ODD}", f"Edited {ODD}"]
    assert store.revisions(chat.id)[1].label == f"append {ODD}"
    assert {b.branch.name for b in store.branches(chat.id)} == {"main", f"branch {ODD}"}
    assert store.checkpoints(chat.id)[0].name == f"mark {ODD}"
    assert [c.chat.title for c in store.list_chats()] == [f"Title {ODD}"]
    with store.write(chat.id, revision=chat.revision + 2, label="undo") as w:
        w.undo()
    assert store.get_node(chat.id, node.id).content == f"Hello {ODD}"


def test_an_imported_tree_keeps_every_character(store: SqlStore) -> None:
    nodes = [
        Node(id=new_id(), chat_id="", parent_id=None, role=NodeRole.USER, content=f"one {ODD}"),
    ]
    nodes.append(
        Node(
            id=new_id(),
            chat_id="",
            parent_id=nodes[0].id,
            role=NodeRole.ASSISTANT,
            content=f"two {ODD}",
            speaker=ODD,
            extras={"_st": {ODD: ODD}},
        )
    )
    chat = store.import_tree(NewChat(title=ODD), nodes, active_leaf_id=nodes[1].id)
    read = store.active_path(chat.id).nodes
    assert [n.content for n in read] == [f"one {ODD}", f"two {ODD}"]
    assert read[1].speaker == ODD and read[1].extras == {"_st": {ODD: ODD}}
    assert store.get_chat(chat.id).title == ODD


def test_documents_and_token_counts_keep_every_character(store: SqlStore) -> None:
    card = store.put_document("character", f"Ann {ODD}", {"name": ODD, ODD: [ODD]})
    again = store.get_document(card.id)
    assert (again.name, again.data) == (f"Ann {ODD}", {"name": ODD, ODD: [ODD]})
    [found] = store.find_documents("character", name=f"Ann {ODD}")
    assert found.id == card.id
    assert store.versions_of(owner="", names={"character": [f"Ann {ODD}"]})[0].id == card.id
    chat = store.create_chat(NewChat(title="t"))
    with store.write(chat.id, revision=chat.revision, label="append") as w:
        w.insert_node(None, NodeRole.USER, ODD)
    store.save_token_counts("o200k", {ODD: 7})
    assert store.token_counts("o200k", [ODD]) == {ODD: 7}


@given(st.text())
def test_the_escape_undoes_exactly(text: str) -> None:
    stored = escape(text)
    assert "\x00" not in stored
    assert unescape(stored) == text
    # PostgreSQL sends a jsonb value back with its characters as they are (not escaped)
    sent = json.dumps(json.loads(dumps({text: [text]})), ensure_ascii=False).encode()
    assert loads(sent) == {text: [text]}
