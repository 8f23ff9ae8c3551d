"""Path ends kept between turns: after any change, what they give equals a fresh read."""

from __future__ import annotations

import itertools
import random

import pytest

from taverna.model.chat import Chat, ChatState, NodeRole, PathTail
from taverna.services.chats.service import ChatService
from taverna.services.turns.paths import PathEnds
from taverna.store.sql import SqlStore


def _same(a: PathTail, b: PathTail) -> bool:
    return (
        a.nodes == b.nodes  # every field of every node
        and (a.before, a.visible_before) == (b.before, b.visible_before)
        and a.state == b.state
    )


def _talk(chats: ChatService, count: int) -> Chat:
    """A chat with a greeting and `count` messages, the person's and the character's in turn."""
    chat = chats.create_chat("t", greetings=["hello"]).chat
    for i in range(count):
        role = NodeRole.USER if i % 2 == 0 else NodeRole.ASSISTANT
        chat = chats.append(chat.id, role, f"m{i}", revision=chat.revision).chat
    return chat


@pytest.mark.parametrize("seed", [5, 11, 23])
def test_path_ends_match_fresh_reads_through_random_changes(store: SqlStore, seed: int) -> None:
    chats = ChatService(store)
    chat = _talk(chats, 40)
    ends = PathEnds(store)
    rng = random.Random(seed)
    for step in range(120):
        chat = chats.get_chat(chat.id)
        path = chats.active_path(chat.id).nodes
        action = rng.choice(
            [
                "append",
                "append",
                "edit",
                "hide",
                "delete",
                "swipe",
                "select",
                "undo",
                "branch",
                "state",
                "restore",
            ]
        )
        node = rng.choice(path[-12:]) if path else None
        try:
            if action == "append" or node is None:
                role = NodeRole.USER if rng.random() < 0.5 else NodeRole.ASSISTANT
                chats.append(chat.id, role, f"s{step}", revision=chat.revision)
            elif action == "edit":
                chats.edit(chat.id, node.id, f"edited {step}", revision=chat.revision)
            elif action == "hide":
                chats.set_hidden(chat.id, [node.id], not node.hidden, revision=chat.revision)
            elif action == "delete":
                chats.delete(chat.id, node.id, revision=chat.revision)
            elif action == "restore":
                gone = [n for n in store.tree(chat.id).nodes if n.deleted]
                if gone:
                    chats.restore(chat.id, rng.choice(gone).id, revision=chat.revision)
            elif action == "swipe" and node.role is NodeRole.ASSISTANT:
                chats.swipe(chat.id, node.id, f"alt {step}", revision=chat.revision)
            elif action == "select":
                options = chats.candidates(chat.id, node.id)
                chats.select_candidate(chat.id, rng.choice(options).id, revision=chat.revision)
            elif action == "undo":
                chats.undo(chat.id, revision=chat.revision)
            elif action == "branch":
                chats.branch_from(chat.id, node.id, f"b{step}", revision=chat.revision)
            elif action == "state":
                chats.write_state(
                    chat.id, node.id, ChatState(variables={"n": step}), revision=chat.revision
                )
        except Exception as error:  # an action the tree refuses here (nothing to undo...)
            if "Conflict" in type(error).__name__:
                raise
        chat = chats.get_chat(chat.id)
        if chat.active_leaf_id is None:
            continue
        want = rng.choice([1, 3, 10, 200])
        kept = ends.tail(chat, chat.active_leaf_id, want)
        fresh = store.path_tail(chat.id, chat.active_leaf_id, limit=want)
        assert _same(kept, fresh), (step, action)
    assert ends.splices > 30  # most turns spliced rather than read again


def test_user_messages_before_counts_the_persons_messages_above_the_end(store: SqlStore) -> None:
    chats = ChatService(store)
    chat = chats.create_chat("t").chat
    for i in range(30):
        role = NodeRole.USER if i % 3 == 0 else NodeRole.ASSISTANT
        chat = chats.append(chat.id, role, f"m{i}", revision=chat.revision).chat
    ends = PathEnds(store)
    assert chat.active_leaf_id is not None
    tail = ends.tail(chat, chat.active_leaf_id, 5)
    assert tail.before == 25
    assert ends.user_messages_before(chat, tail) == 9  # m0, m3, ..., m24


def test_many_chats_stay_kept_within_a_bound_on_messages(store: SqlStore) -> None:
    """A server with many people keeps every active chat's end (not only the last few
    chats'), up to a number of messages in all; the oldest used go first."""
    chats = ChatService(store)
    made = []
    for i in range(40):
        chat = chats.create_chat(f"c{i}", greetings=["hello"]).chat
        for j in range(4):
            role = NodeRole.USER if j % 2 == 0 else NodeRole.ASSISTANT
            chat = chats.append(chat.id, role, f"m{j}", revision=chat.revision).chat
        made.append(chat)
    ends = PathEnds(store, max_messages=5 * 30)
    for chat in made:
        assert chat.active_leaf_id is not None
        ends.tail(chat, chat.active_leaf_id, 5)
    assert ends.reads == 40
    # the 30 used last are kept whole (5 messages each): asking again reads nothing
    for chat in made[10:]:
        assert chat.active_leaf_id is not None
        ends.tail(chat, chat.active_leaf_id, 5)
    assert ends.reads == 40
    # the first ten went to stay within the bound
    first = made[0]
    assert first.active_leaf_id is not None
    ends.tail(first, first.active_leaf_id, 5)
    assert ends.reads == 41


def test_a_long_running_chat_keeps_about_its_window(store: SqlStore) -> None:
    """Turn after turn, a splice adds each new message to the kept end; its oldest go
    once it holds twice what turns read, so it does not grow into the whole story."""
    from taverna.services.turns import paths as turn_paths

    chats = ChatService(store)
    chat = chats.create_chat("t").chat
    ends = PathEnds(store)
    want = 10
    for i in range(200):
        role = NodeRole.USER if i % 2 == 0 else NodeRole.ASSISTANT
        chat = chats.append(chat.id, role, f"m{i}", revision=chat.revision).chat
        assert chat.active_leaf_id is not None
        tail = ends.tail(chat, chat.active_leaf_id, want)
        assert _same(tail, store.path_tail(chat.id, chat.active_leaf_id, limit=want))
        assert ends.user_messages_before(chat, tail) == sum(
            1 for j in range(i + 1 - len(tail.nodes)) if j % 2 == 0
        )
        held = len(ends._kept[chat.id].nodes)
        assert held <= 2 * want + turn_paths.TRIM_SLACK
    # a chat shorter than a splice's climb is read whole; after that, only splices
    assert ends.reads <= 4


def test_a_splice_keeps_the_unchanged_nodes_it_holds(store: SqlStore) -> None:
    """An append re-reads the few messages above it; those the kept end holds unchanged
    stay the kept objects (what the last turn made of them is found again by identity),
    and every node holds its parent's id object rather than a copy of it."""
    chats = ChatService(store)
    chat = _talk(chats, 12)
    ends = PathEnds(store)
    assert chat.active_leaf_id is not None
    before = ends.tail(chat, chat.active_leaf_id, 20).nodes
    for i in range(2):
        role = NodeRole.USER if i % 2 == 0 else NodeRole.ASSISTANT
        chat = chats.append(chat.id, role, f"new {i}", revision=chat.revision).chat
    assert chat.active_leaf_id is not None
    after = ends.tail(chat, chat.active_leaf_id, 20).nodes
    assert ends.splices == 1
    assert all(a is b for a, b in zip(before, after, strict=False))
    assert [n.content for n in after[len(before) :]] == ["new 0", "new 1"]
    assert all(b.parent_id is a.id for a, b in itertools.pairwise(after))
