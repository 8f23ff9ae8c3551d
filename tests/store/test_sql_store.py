"""The SQL store on its own: schema, units of work, revisions, bulk import, documents."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from taverna.errors import Conflict, NotFound, TavernaError
from taverna.model.chat import (
    Branch,
    CharacterRef,
    ChatState,
    Checkpoint,
    Node,
    NodeRole,
    new_id,
)
from taverna.store import NewChat, StaleRevision
from taverna.store import schema as t
from taverna.store.sql import MIGRATIONS, SqlStore, open_store
from taverna.store.sql.search import SEARCH_TABLES
from taverna.store.testing import counting_statements


def _append(
    store: SqlStore, chat_id: str, revision: int, text: str, role: NodeRole = NodeRole.USER
) -> Node:
    with store.write(chat_id, revision=revision, label="append") as w:
        parent = w.chat.active_leaf_id
        node = w.insert_node(parent, role, text)
        w.set_selection(parent, node.id)
        w.set_active(node.id)
    return node


def test_migrations_reach_head_and_reopen_is_harmless(tmp_path: Path) -> None:
    store = open_store(tmp_path / "data")
    chat = store.create_chat(NewChat(title="kept"))
    store.close()
    store = open_store(tmp_path / "data")
    with store.engine.connect() as conn:
        current = MigrationContext.configure(conn).get_current_revision()
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    assert current == ScriptDirectory.from_config(config).get_current_head()
    assert store.get_chat(chat.id).title == "kept"
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    store.close()


def test_new_chat_has_revision_one_and_a_main_branch(store: SqlStore) -> None:
    chat = store.create_chat(
        NewChat(title="Tea", characters=(CharacterRef("Seraphina", "doc-1"),), user_name="Ann")
    )
    assert chat.revision == 1
    assert chat.characters == (CharacterRef("Seraphina", "doc-1"),)
    [main] = store.branches(chat.id)
    assert main.branch.name == "main" and main.active and main.length == 0
    assert store.active_path(chat.id).entries == ()


def test_write_bumps_revision_and_stale_write_conflicts(store: SqlStore) -> None:
    chat = store.create_chat(NewChat(title="c"))
    _append(store, chat.id, 1, "one")
    assert store.get_chat(chat.id).revision == 2
    with pytest.raises(StaleRevision) as caught:
        _append(store, chat.id, 1, "lost")
    assert isinstance(caught.value, Conflict)
    assert caught.value.current_revision == 2
    assert [n.content for n in store.active_path(chat.id).nodes] == ["one"]


def test_conflict_carries_the_current_revision_for_any_caller(store: SqlStore) -> None:
    assert Conflict("moved on").current_revision is None
    plain = Conflict("moved on", field="revision", current_revision=7)
    assert (plain.current_revision, plain.field, str(plain)) == (
        7,
        "revision",
        "field 'revision': moved on",
    )
    chat = store.create_chat(NewChat(title="c"))
    _append(store, chat.id, 1, "one")
    caught: Conflict | None = None
    try:
        _append(store, chat.id, 1, "lost")
    except Conflict as exc:  # what a caller that knows nothing of the store catches
        caught = exc
    assert caught is not None
    assert caught.current_revision == 2
    assert vars(caught)["current_revision"] == 2


def test_failed_unit_of_work_leaves_nothing(store: SqlStore) -> None:
    chat = store.create_chat(NewChat(title="c"))
    with pytest.raises(RuntimeError), store.write(chat.id, revision=1, label="x") as w:
        w.insert_node(None, NodeRole.USER, "half written")
        raise RuntimeError("crash in the middle")
    assert store.get_chat(chat.id).revision == 1
    assert store.tree(chat.id).nodes == ()
    assert [r.number for r in store.revisions(chat.id)] == [1]


def test_unknown_chat_and_node_are_not_found(store: SqlStore) -> None:
    with pytest.raises(NotFound):
        store.get_chat("nope")
    with pytest.raises(NotFound), store.write("nope", revision=1, label="x"):
        pass
    chat = store.create_chat(NewChat(title="c"))
    with pytest.raises(NotFound):
        store.get_node(chat.id, "nope")


def test_content_is_stored_once(store: SqlStore) -> None:
    chat = store.create_chat(NewChat(title="c"))
    _append(store, chat.id, 1, "same words")
    _append(store, chat.id, 2, "same words")
    with store.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(t.contents)).scalar() == 1
        assert conn.execute(sa.select(sa.func.count()).select_from(t.nodes)).scalar() == 2


def test_append_costs_the_same_number_of_statements_at_any_length(store: SqlStore) -> None:
    chat = store.create_chat(NewChat(title="c"))
    revision = 1
    counts = []
    for i in range(60):
        with counting_statements(store) as seen:
            _append(store, chat.id, revision, f"message {i}")
        revision += 1
        counts.append(len(seen))
    assert counts[5] == counts[-1]
    path = store.active_path(chat.id)
    assert [e.node.depth for e in path.entries] == list(range(60))


def test_state_follows_nearest_recording_ancestor(store: SqlStore) -> None:
    chat = store.create_chat(NewChat(title="c", base_state=ChatState(variables={"x": 0})))
    a = _append(store, chat.id, 1, "a")
    b = _append(store, chat.id, 2, "b")
    c = _append(store, chat.id, 3, "c")
    assert store.state_at(chat.id, c.id).variables == {"x": 0}
    with store.write(chat.id, revision=4, label="state") as w:
        w.update_node(a.id, state=ChatState(variables={"x": 1}))
    assert store.state_at(chat.id, c.id).variables == {"x": 1}
    with store.write(chat.id, revision=5, label="state") as w:
        w.update_node(b.id, state=ChatState(variables={"x": 2}))
        w.update_node(a.id, state=None)
    assert store.state_at(chat.id, a.id).variables == {"x": 0}
    assert store.state_at(chat.id, c.id).variables == {"x": 2}
    assert store.active_path(chat.id).state.variables == {"x": 2}


def _bulk_nodes(chat_id: str, count: int) -> tuple[list[Node], str]:
    nodes: list[Node] = []
    parent: str | None = None
    for i in range(count):
        role = NodeRole.USER if i % 2 else NodeRole.ASSISTANT
        first = Node(new_id(), chat_id, parent, role, f"m{i} a")
        second = Node(new_id(), chat_id, parent, role, f"m{i} b", state=ChatState(summary=f"s{i}"))
        nodes += [first, second]
        parent = second.id
    assert parent is not None
    return nodes, parent


def test_import_tree_builds_depths_selections_and_state(store: SqlStore) -> None:
    nodes, leaf = _bulk_nodes("ignored", 50)
    checkpoint = Checkpoint(new_id(), "ignored", "half way", nodes[49].id)
    chat = store.import_tree(
        NewChat(title="imported"), nodes, active_leaf_id=leaf, checkpoints=[checkpoint]
    )
    path = store.active_path(chat.id)
    assert len(path.entries) == 50
    assert [e.candidate_index for e in path.entries] == [1] * 50
    assert {e.candidate_count for e in path.entries} == {2}
    assert path.state.summary == "s49"
    assert store.state_at(chat.id, nodes[40].id).summary == "s19"
    assert store.checkpoints(chat.id)[0].name == "half way"
    [main] = store.branches(chat.id)
    assert main.length == 50 and main.last_message is not None
    assert main.last_message.content == "m49 b"
    tree = store.tree(chat.id)
    assert len(tree.nodes) == 100 and tree.selections[""] == nodes[1].id
    # the imported chat keeps working as a normal one
    _append(store, chat.id, chat.revision, "after import")
    assert store.active_path(chat.id).leaf.content == "after import"  # type: ignore[union-attr]


def test_import_tree_rejects_orphans_and_unknown_leaf(store: SqlStore) -> None:
    orphan = Node(new_id(), "x", "missing-parent", NodeRole.USER, "hi")
    with pytest.raises(TavernaError, match="parent"):
        store.import_tree(NewChat(title="bad"), [orphan], active_leaf_id=orphan.id)
    root = Node(new_id(), "x", None, NodeRole.USER, "hi")
    with pytest.raises(TavernaError, match="active leaf"):
        store.import_tree(NewChat(title="bad"), [root], active_leaf_id="nope")
    with pytest.raises(TavernaError, match="twice"):
        store.import_tree(NewChat(title="bad"), [root, root], active_leaf_id=root.id)
    with pytest.raises(TavernaError, match="branch"):
        store.import_tree(
            NewChat(title="bad"),
            [root],
            active_leaf_id=root.id,
            branches=[Branch(new_id(), "x", "lost", "nope")],
        )
    with pytest.raises(TavernaError, match="checkpoint"):
        store.import_tree(
            NewChat(title="bad"),
            [root],
            active_leaf_id=root.id,
            checkpoints=[Checkpoint(new_id(), "x", "lost", "nope")],
        )
    assert store.list_chats() == []


def test_import_tree_with_named_branches(store: SqlStore) -> None:
    nodes, leaf = _bulk_nodes("x", 3)
    side = Branch(new_id(), "x", "side", nodes[2].id)
    main = Branch(new_id(), "x", "story", leaf)
    chat = store.import_tree(NewChat(title="b"), nodes, active_leaf_id=leaf, branches=[main, side])
    listed = {b.branch.name: b for b in store.branches(chat.id)}
    assert listed["story"].active and listed["story"].length == 3
    assert not listed["side"].active and listed["side"].length == 2


def test_branch_listing_reads_heads_without_walking_paths(store: SqlStore) -> None:
    nodes, leaf = _bulk_nodes("x", 40)
    spine = nodes[1::2]  # the path: the second candidate at every depth
    branches = [Branch(new_id(), "x", f"b{i}", spine[i * 3].id) for i in range(10)]
    chat = store.import_tree(NewChat(title="b"), nodes, active_leaf_id=leaf, branches=branches)
    with counting_statements(store) as seen:
        listed = {b.branch.name: b for b in store.branches(chat.id)}
    assert not any("RECURSIVE" in s.upper() for s in seen)
    assert len(seen) <= 5  # a fixed number of statements, however many branches
    assert [listed[f"b{i}"].length for i in range(10)] == [i * 3 + 1 for i in range(10)]
    last = listed["b4"].last_message
    assert last is not None and last.id == spine[12].id
    # tombstones on a path are not counted; the last live message is found above them
    revision = chat.revision
    for index in (11, 12, 20):
        with store.write(chat.id, revision=revision, label="delete") as w:
            w.update_node(spine[index].id, deleted=True)
        revision += 1
    listed = {b.branch.name: b for b in store.branches(chat.id)}
    assert listed["b3"].length == 10 and listed["b4"].length == 11
    last = listed["b4"].last_message
    assert last is not None and last.id == spine[10].id
    last = listed["b7"].last_message
    assert listed["b7"].length == 22 - 3 and last is not None and last.id == spine[21].id


def test_list_chats_counts_without_walking(store: SqlStore) -> None:
    first = store.create_chat(NewChat(title="one", characters=(CharacterRef("Kael"),)))
    second = store.create_chat(NewChat(title="two", owner="someone else"))
    _append(store, first.id, 1, "a")
    _append(store, first.id, 2, "b")
    [listed] = store.list_chats()
    assert listed.chat.id == first.id
    assert (listed.path_length, listed.node_count, listed.branch_count) == (2, 2, 1)
    assert [c.chat.id for c in store.list_chats(owner="someone else")] == [second.id]
    assert store.list_chats(character="Kael")[0].chat.id == first.id
    assert store.list_chats(character="Nobody") == []


def test_delete_chat_removes_everything(store: SqlStore) -> None:
    chat = store.create_chat(NewChat(title="gone"))
    _append(store, chat.id, 1, "a")
    with pytest.raises(StaleRevision):
        store.delete_chat(chat.id, revision=1)
    store.delete_chat(chat.id, revision=2)
    with pytest.raises(NotFound):
        store.get_chat(chat.id)
    with store.engine.connect() as conn:
        for table in (t.nodes, t.revisions, t.changes, t.branches, t.selections, t.contents):
            assert conn.execute(sa.select(sa.func.count()).select_from(table)).scalar() == 0


def test_documents_versioned_with_optional_blob(store: SqlStore) -> None:
    card = store.put_document("character", "Seraphina", {"spec": "chara_card_v3"}, blob=b"\x89PNG")
    assert card.revision == 1 and card.blob == b"\x89PNG"
    updated = store.put_document(
        "character", "Seraphina", {"spec": "chara_card_v3", "x": 1}, id=card.id, revision=1
    )
    assert updated.revision == 2 and updated.blob == b"\x89PNG"
    with pytest.raises(StaleRevision) as caught:
        store.put_document("character", "Seraphina", {}, id=card.id, revision=1)
    assert caught.value.current_revision == 2
    store.put_document("lorebook", "Eldoria", {"entries": {}})
    [found] = store.find_documents("character")
    assert found.blob is None and found.data["x"] == 1
    assert store.find_documents("character", with_blobs=True)[0].blob == b"\x89PNG"
    assert store.find_documents("character", name="Kael") == []
    assert store.find_documents("character", owner="other") == []
    with pytest.raises(StaleRevision):
        store.delete_document(card.id, revision=1)
    store.delete_document(card.id, revision=2)
    with pytest.raises(NotFound):
        store.get_document(card.id)


def test_documents_keep_unicode_and_nested_json(store: SqlStore) -> None:
    data = {"name": "東京", "nested": {"list": [1, 2.5, None, True], "emoji": "🙂"}}
    doc = store.put_document("preset", "日本語", data)
    again = store.get_document(doc.id)
    assert again.data == data and again.name == "日本語"


def test_two_writers_on_the_same_revision_one_wins(store: SqlStore) -> None:
    chat = store.create_chat(NewChat(title="race"))
    _append(store, chat.id, 1, "first")
    with pytest.raises(StaleRevision):
        _append(store, chat.id, 1, "second")
    assert [n.content for n in store.active_path(chat.id).nodes] == ["first"]


def test_concurrent_writers_never_lose_an_append(store: SqlStore) -> None:
    chat = store.create_chat(NewChat(title="busy"))
    errors: list[BaseException] = []

    def writer(name: str) -> None:
        try:
            for i in range(8):
                while True:
                    revision = store.get_chat(chat.id).revision
                    try:
                        _append(store, chat.id, revision, f"{name}{i}")
                        break
                    except StaleRevision:
                        continue
        except BaseException as exc:  # reported below; a thread cannot fail the test itself
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(name,)) for name in "abc"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    contents = [n.content for n in store.active_path(chat.id).nodes]
    assert sorted(contents) == sorted(f"{n}{i}" for n in "abc" for i in range(8))
    assert store.get_chat(chat.id).revision == 1 + 24


def test_timestamps_keep_their_instant_whatever_the_zone(store: SqlStore) -> None:
    zone = timezone(timedelta(hours=2))
    moment = datetime(2024, 9, 28, 14, 3, 12, 450000, tzinfo=zone)
    root = Node(new_id(), "x", None, NodeRole.ASSISTANT, "hi", created=moment)
    chat = store.import_tree(NewChat(title="t", created=moment), [root], active_leaf_id=root.id)
    [entry] = store.active_path(chat.id).entries
    assert entry.node.created == moment
    assert store.get_chat(chat.id).created == moment
    assert store.tree(chat.id).nodes[0].created == moment


def _declared(conn: sa.Connection) -> MigrationContext:
    """A migration context that compares every table but the search index's, whose shape
    differs by database (an FTS5 virtual table on SQLite) and is built by raw DDL (0009)."""

    def include(name: str | None, kind: str, _parent: Any) -> bool:
        return not (kind == "table" and name is not None and name.startswith(SEARCH_TABLES))

    return MigrationContext.configure(conn, opts={"include_name": include})


def test_migrations_build_exactly_the_declared_schema(store: SqlStore) -> None:
    from alembic.autogenerate import compare_metadata

    with store.engine.connect() as conn:
        differences = compare_metadata(_declared(conn), t.metadata)
    assert differences == []


def test_a_store_made_by_the_first_migration_upgrades_on_open(tmp_path: Path) -> None:
    from alembic import command
    from alembic.autogenerate import compare_metadata

    from taverna.store.sql.engines import _sqlite_engine

    engine = _sqlite_engine(tmp_path / "old.db", "normal")
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0001")
    engine.dispose()
    store = open_store(tmp_path / "old.db")
    try:
        with store.engine.connect() as conn:
            assert compare_metadata(_declared(conn), t.metadata) == []
        chat = store.create_chat(NewChat(title="after upgrade"))
        assert store.get_chat(chat.id).title == "after upgrade"
    finally:
        store.close()


def test_sqlite_plans_sibling_counts_and_tombstones_on_their_indexes(tmp_path: Path) -> None:
    # A path read counts candidates once per message: on the wrong index it turns
    # into a scan of the whole chat per message.
    store = open_store(tmp_path / "data")
    try:
        with store.engine.connect() as conn:
            plan = conn.exec_driver_sql(
                "EXPLAIN QUERY PLAN SELECT COUNT(*) FROM nodes s WHERE s.chat_id = 'c'"
                " AND s.parent_id = 'p' AND s.deleted = 0 AND s.id < 'x'"
            ).all()
            assert "ix_nodes_siblings" in str(plan)
            plan = conn.exec_driver_sql(
                "EXPLAIN QUERY PLAN SELECT id FROM nodes WHERE chat_id = 'c' AND deleted = 1 LIMIT 1"
            ).all()
            assert "ix_nodes_tombstones" in str(plan)
    finally:
        store.close()


def test_deleting_a_chat_removes_its_texts_but_not_shared_ones(store: SqlStore) -> None:
    a = store.create_chat(NewChat(title="a"))
    b = store.create_chat(NewChat(title="b"))
    _append(store, a.id, 1, "shared")
    edited = _append(store, a.id, 2, "only in a's history elsewhere")
    with store.write(a.id, revision=3, label="edit") as w:
        w.update_node(edited.id, content="a edited")
    _append(store, a.id, 4, "a, then undone")
    with store.write(a.id, revision=5, label="undo") as w:
        w.undo()
    _append(store, b.id, 1, "shared")
    b_node = _append(store, b.id, 2, "only in a's history elsewhere")
    with store.write(b.id, revision=3, label="edit") as w:
        w.update_node(b_node.id, content="b now")

    def texts() -> set[str]:
        with store.engine.connect() as conn:
            return set(conn.execute(sa.select(t.contents.c.text)).scalars())

    assert {"a edited", "a, then undone"} <= texts()
    store.delete_chat(a.id, revision=6)
    assert texts() == {"shared", "only in a's history elsewhere", "b now"}
    history = [v.content for v in store.content_history(b.id, b_node.id)]
    assert history == ["only in a's history elsewhere", "b now"]
    with store.write(b.id, revision=4, label="undo") as w:
        w.undo()
    assert store.get_node(b.id, b_node.id).content == "only in a's history elsewhere"
