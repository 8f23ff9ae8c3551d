"""Random sequences of chat operations keep the tree sound, and undo/redo walk them exactly."""

from __future__ import annotations

import shutil
import tempfile
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from taverna.errors import NotFound, TavernaError
from taverna.model.chat import ActivePath, ChatState, NodeRole, effective_state, new_id
from taverna.services.chats.service import ChatService, WriteResult
from taverna.store import NewChat
from taverna.store.testing import backends, temporary_store

words = st.text(alphabet="abcdefgh ", min_size=1, max_size=8)
picks = st.integers(min_value=0, max_value=1000)


def _reading(path: ActivePath) -> list[tuple[Any, ...]]:
    """What a person and the model see of a path, without ids."""
    return [
        (
            e.node.content,
            e.node.hidden,
            e.node.deleted,
            e.node.state,
            e.position,
            e.candidate_index,
            e.candidate_count,
        )
        for e in path.entries
    ] + [("state", path.state)]


def _branch_list(chats: ChatService, chat_id: str) -> list[tuple[str, int, bool]]:
    return sorted((b.branch.name, b.length, b.active) for b in chats.list_branches(chat_id))


class TreeMachine(RuleBasedStateMachine):
    """Drives the chat service; models only what undo and redo must give back."""

    backend = "sqlite"

    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="taverna-machine-"))
        self.exits = ExitStack()
        self.store = self.exits.enter_context(temporary_store(self.backend, self.folder))
        self.chats = ChatService(self.store)
        out = self.chats.create_chat("machine")
        self.chat_id = out.chat.id
        self.revision = out.chat.revision
        self.done: list[tuple[Any, Any]] = []
        self.undone: list[tuple[Any, Any]] = []
        self.branch_names = 0

    def teardown(self) -> None:
        self.exits.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    # ------------------------------------------------------------- helpers

    def snapshot(self) -> Any:
        tree = self.store.tree(self.chat_id)
        return (
            tree.chat.active_leaf_id,
            tree.chat.active_branch_id,
            tree.chat.base_state,
            sorted(
                (n.id, n.parent_id, n.content, n.hidden, n.deleted, repr(n.state))
                for n in tree.nodes
            ),
            sorted(tree.selections.items()),
            sorted((b.id, b.name, b.head_id) for b in tree.branches),
            sorted((c.id, c.name, c.node_id) for c in tree.checkpoints),
        )

    def path(self) -> list[Any]:
        return list(self.chats.active_path(self.chat_id).entries)

    def operate(self, operation: Any) -> None:
        before = self.snapshot()
        try:
            out = operation(self.revision)
        except TavernaError:
            assert self.snapshot() == before
            assert self.store.get_chat(self.chat_id).revision == self.revision
            return
        if isinstance(out, tuple):
            out = out[0]
        assert isinstance(out, WriteResult)
        assert out.chat.revision == self.revision + 1
        self.revision = out.chat.revision
        self.done.append((before, self.snapshot()))
        self.undone.clear()

    def pick(self, seq: list[Any], index: int) -> Any:
        return seq[index % len(seq)]

    # --------------------------------------------------------------- rules

    @rule(role=st.sampled_from(list(NodeRole)), text=words)
    def append(self, role: NodeRole, text: str) -> None:
        self.operate(lambda r: self.chats.append(self.chat_id, role, text, revision=r))

    @precondition(lambda self: self.path())
    @rule(at=picks, text=words, select=st.booleans())
    def swipe(self, at: int, text: str, select: bool) -> None:
        node = self.pick(self.path(), at).node
        self.operate(
            lambda r: self.chats.swipe(self.chat_id, node.id, text, revision=r, select=select)
        )

    @precondition(lambda self: self.path())
    @rule(at=picks, which=picks)
    def select(self, at: int, which: int) -> None:
        node = self.pick(self.path(), at).node
        choices = self.chats.candidates(self.chat_id, node.id)
        target = self.pick(choices, which)
        self.operate(lambda r: self.chats.select_candidate(self.chat_id, target.id, revision=r))

    @precondition(lambda self: self.path())
    @rule(at=picks, text=words, resend=st.booleans())
    def edit(self, at: int, text: str, resend: bool) -> None:
        node = self.pick(self.path(), at).node
        if resend:
            self.operate(
                lambda r: self.chats.edit_and_resend(self.chat_id, node.id, text, revision=r)
            )
        else:
            self.operate(lambda r: self.chats.edit(self.chat_id, node.id, text, revision=r))

    @precondition(lambda self: self.path())
    @rule(a=picks, b=picks, hidden=st.booleans())
    def hide(self, a: int, b: int, hidden: bool) -> None:
        size = len(self.path())
        start, end = sorted((a % (size + 1), b % (size + 1)))
        self.operate(
            lambda r: self.chats.hide_range(self.chat_id, start, end, revision=r, hidden=hidden)
        )

    @precondition(lambda self: self.path())
    @rule(at=picks, from_here=st.booleans())
    def delete(self, at: int, from_here: bool) -> None:
        node = self.pick(self.path(), at).node
        if from_here:
            self.operate(lambda r: self.chats.delete_from_here(self.chat_id, node.id, revision=r))
        else:
            self.operate(lambda r: self.chats.delete(self.chat_id, node.id, revision=r))

    @rule(which=picks)
    def restore(self, which: int) -> None:
        gone = [n for n in self.store.tree(self.chat_id).nodes if n.deleted]
        if gone:
            node = self.pick(gone, which)
            self.operate(lambda r: self.chats.restore(self.chat_id, node.id, revision=r))

    @precondition(lambda self: self.path())
    @rule(at=picks, switch=st.booleans())
    def branch(self, at: int, switch: bool) -> None:
        node = self.pick(self.path(), at).node
        self.branch_names += 1
        name = f"b{self.branch_names}"
        self.operate(
            lambda r: self.chats.branch_from(self.chat_id, node.id, name, revision=r, switch=switch)
        )

    @rule(which=picks)
    def switch(self, which: int) -> None:
        branch = self.pick(self.chats.list_branches(self.chat_id), which).branch
        self.operate(lambda r: self.chats.switch_branch(self.chat_id, branch.id, revision=r))

    @precondition(lambda self: self.path())
    @rule(at=picks, value=st.integers(0, 9))
    def state(self, at: int, value: int) -> None:
        node = self.pick(self.path(), at).node
        state = ChatState(variables={"v": value})
        self.operate(lambda r: self.chats.write_state(self.chat_id, node.id, state, revision=r))

    @rule()
    def bulk_copy_reads_the_same(self) -> None:
        """A copy made through the bulk import path reads exactly like the original."""
        tree = self.store.tree(self.chat_id)
        ids = {node.id: new_id() for node in tree.nodes}
        copies = [
            replace(n, id=ids[n.id], parent_id=ids[n.parent_id] if n.parent_id else None)
            for n in tree.nodes
        ]
        leaf = tree.chat.active_leaf_id
        active = [b for b in tree.branches if b.id == tree.chat.active_branch_id]
        others = [b for b in tree.branches if b.id != tree.chat.active_branch_id]
        copy = self.store.import_tree(
            NewChat(title="copy", base_state=tree.chat.base_state),
            copies,
            active_leaf_id=ids[leaf] if leaf else None,
            branches=[
                replace(b, id=new_id(), head_id=ids[b.head_id] if b.head_id else None)
                for b in active + others
            ],
            checkpoints=[replace(c, id=new_id(), node_id=ids[c.node_id]) for c in tree.checkpoints],
            selections={(ids[p] if p else ""): ids[c] for p, c in tree.selections.items()},
        )
        try:
            for include_deleted in (False, True):
                mine = self.chats.active_path(self.chat_id, include_deleted=include_deleted)
                theirs = self.chats.active_path(copy.id, include_deleted=include_deleted)
                assert _reading(mine) == _reading(theirs)
            for node in tree.nodes:
                assert self.store.state_at(self.chat_id, node.id) == self.store.state_at(
                    copy.id, ids[node.id]
                )
            assert _branch_list(self.chats, self.chat_id) == _branch_list(self.chats, copy.id)
        finally:
            self.store.delete_chat(copy.id, revision=copy.revision)

    @rule()
    def undo(self) -> None:
        if not self.done:
            try:
                self.chats.undo(self.chat_id, revision=self.revision)
            except NotFound:
                return
            raise AssertionError("undo with nothing to undo")
        before, after = self.done.pop()
        assert self.snapshot() == after
        self.revision = self.chats.undo(self.chat_id, revision=self.revision).chat.revision
        assert self.snapshot() == before
        self.undone.append((before, after))

    @rule()
    def redo(self) -> None:
        if not self.undone:
            try:
                self.chats.redo(self.chat_id, revision=self.revision)
            except NotFound:
                return
            raise AssertionError("redo with nothing to redo")
        before, after = self.undone.pop()
        self.revision = self.chats.redo(self.chat_id, revision=self.revision).chat.revision
        assert self.snapshot() == after
        self.done.append((before, after))

    # ---------------------------------------------------------- invariants

    @invariant()
    def path_is_a_chain_to_the_active_leaf(self) -> None:
        chat = self.store.get_chat(self.chat_id)
        assert chat.revision == self.revision
        full = self.chats.active_path(self.chat_id, include_deleted=True)
        nodes = full.nodes
        if chat.active_leaf_id is None:
            assert nodes == ()
        else:
            assert nodes[-1].id == chat.active_leaf_id
        parent = None
        chosen = self.store.tree(self.chat_id).selections
        for depth, node in enumerate(nodes):
            assert node.parent_id == parent and node.depth == depth
            # the choice at every fork of the active path is remembered
            assert chosen.get(parent or "") == node.id
            parent = node.id
        whole = self.chats.active_path(self.chat_id)
        visible = whole.entries
        for tail in (1, 2, 5):
            window = self.chats.active_path(self.chat_id, tail=tail)
            assert window.entries == visible[-tail:]
            assert window.state == whole.state
        assert [e.position for e in visible] == list(range(len(visible)))
        # Pages by cursor are slices of the whole path, with its positions and counts.
        assert self.store.path_before(self.chat_id, None, limit=2).entries == visible[-2:]
        assert self.store.path_after(self.chat_id, None, limit=2).entries == visible[:2]
        for k, entry in enumerate(visible):
            older = self.store.path_before(self.chat_id, entry.node.id, limit=2)
            assert older.entries == visible[max(0, k - 2) : k]
            newer = self.store.path_after(self.chat_id, entry.node.id, limit=2)
            assert newer.entries == visible[k + 1 : k + 3]
            assert newer.total == len(visible)
            # A page from a position: the path from there (moved back to end full).
            at = self.store.path_at(self.chat_id, k, limit=2)
            assert at.entries == visible[min(k, max(0, len(visible) - 2)) :][:2]
        for entry in visible:
            assert 0 <= entry.candidate_index < entry.candidate_count
        assert full.state == effective_state(nodes, chat.base_state)
        assert self.chats.state_at(self.chat_id) == full.state
        listed = self.chats.list_branches(self.chat_id)
        heads = {b.branch.id: b.branch.head_id for b in listed}
        assert heads[chat.active_branch_id] == chat.active_leaf_id  # type: ignore[index]
        for summary in listed:
            head = summary.branch.head_id
            alive = (
                [n for n in self.store.path_to(self.chat_id, head) if not n.deleted] if head else []
            )
            assert summary.length == len(alive)
            assert summary.last_message == (alive[-1] if alive else None)
            assert summary.active == (summary.branch.id == chat.active_branch_id)


TreeMachine.TestCase.settings = settings(
    max_examples=20,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_tree_machine = TreeMachine.TestCase


class PostgresTreeMachine(TreeMachine):
    """The same machine on PostgreSQL (fewer runs: each one builds a schema)."""

    backend = "postgresql"


PostgresTreeMachine.TestCase.settings = settings(
    max_examples=5,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_tree_machine_postgresql = pytest.mark.skipif(
    "postgresql" not in backends(), reason="TAVERNA_TEST_DATABASE_URL is not set"
)(PostgresTreeMachine.TestCase)
