"""Chat operations through the service: swipes, edits, hides, deletes, branches, undo, state."""

from __future__ import annotations

import pytest

from taverna.errors import Conflict, NotFound, TavernaError
from taverna.model.chat import AuthorsNote, BranchSummary, ChatState, NodeRole
from taverna.services.chats.service import ChatService, WriteResult

USER, BOT = NodeRole.USER, NodeRole.ASSISTANT


def texts(chats: ChatService, chat_id: str) -> list[str]:
    return [n.content for n in chats.active_path(chat_id).nodes]


def conversation(chats: ChatService, *lines: str) -> WriteResult:
    """A chat with a greeting then alternating user/assistant lines."""
    out = chats.create_chat("story", greetings=["Hello."], greeting_speaker="Seraphina")
    for i, line in enumerate(lines):
        role = USER if i % 2 == 0 else BOT
        out = chats.append(out.chat.id, role, line, revision=out.chat.revision)
    return out


def test_greetings_are_candidates_of_the_first_message(chats: ChatService) -> None:
    out = chats.create_chat("c", greetings=["Hi.", "Hey.", "Yo."], greeting_speaker="Kael")
    path = chats.active_path(out.chat.id)
    [entry] = path.entries
    assert (entry.node.content, entry.candidate_index, entry.candidate_count) == ("Hi.", 0, 3)
    assert entry.node.speaker == "Kael" and entry.node.role is BOT
    step = chats.step_candidate(out.chat.id, entry.node.id, -1, revision=out.chat.revision)
    assert texts(chats, out.chat.id) == ["Yo."]
    greeting = chats.active_path(out.chat.id).entries[0]
    assert (greeting.candidate_index, greeting.candidate_count) == (2, 3)
    more = chats.swipe(out.chat.id, greeting.node.id, "Fourth.", revision=step.chat.revision)
    assert texts(chats, out.chat.id) == ["Fourth."]
    assert chats.active_path(out.chat.id).entries[0].candidate_count == 4
    assert more.chat.revision == step.chat.revision + 1


def test_append_every_role_and_revision_counts_up(chats: ChatService) -> None:
    out = chats.create_chat("c")
    assert out.chat.revision == 1
    for role in NodeRole:
        out = chats.append(out.chat.id, role, role.value, revision=out.chat.revision, speaker="x")
    assert [n.role for n in chats.active_path(out.chat.id).nodes] == list(NodeRole)
    assert out.chat.revision == 1 + len(NodeRole)


def test_stale_revision_is_a_conflict_with_the_current_one(chats: ChatService) -> None:
    out = conversation(chats, "hi")
    with pytest.raises(Conflict) as caught:
        chats.append(out.chat.id, USER, "late", revision=out.chat.revision - 1)
    assert caught.value.current_revision == out.chat.revision  # type: ignore[attr-defined]
    assert texts(chats, out.chat.id) == ["Hello.", "hi"]


def test_swipe_and_select_restore_the_path_below(chats: ChatService) -> None:
    out = conversation(chats, "hi", "first answer", "tell me more", "more")
    cid = out.chat.id
    first = chats.active_path(cid).entries[2].node
    # swipe at the first answer: the new candidate starts a fresh path
    out = chats.swipe(cid, first.id, "second answer", revision=out.chat.revision)
    assert texts(chats, cid) == ["Hello.", "hi", "second answer"]
    entry = chats.active_path(cid).entries[2]
    assert (entry.candidate_index, entry.candidate_count) == (1, 2)
    out = chats.append(cid, USER, "on the second", revision=out.chat.revision)
    # back to the first candidate: its continuation comes back
    out = chats.select_candidate(cid, first.id, revision=out.chat.revision)
    assert texts(chats, cid) == ["Hello.", "hi", "first answer", "tell me more", "more"]
    out = chats.step_candidate(cid, first.id, 1, revision=out.chat.revision)
    assert texts(chats, cid) == ["Hello.", "hi", "second answer", "on the second"]
    assert [c.content for c in chats.candidates(cid, first.id)] == ["first answer", "second answer"]


def test_swipe_without_selecting_keeps_the_path(chats: ChatService) -> None:
    out = conversation(chats, "hi", "answer")
    leaf = out.node
    assert leaf is not None
    chats.swipe(out.chat.id, leaf.id, "background", revision=out.chat.revision, select=False)
    assert texts(chats, out.chat.id)[-1] == "answer"
    assert chats.active_path(out.chat.id).entries[-1].candidate_count == 2


def test_edit_in_place_keeps_history(chats: ChatService) -> None:
    out = conversation(chats, "hi", "typo answr")
    node = out.node
    assert node is not None
    out = chats.edit(out.chat.id, node.id, "typo answer", revision=out.chat.revision)
    out = chats.edit(out.chat.id, node.id, "final answer", revision=out.chat.revision)
    assert texts(chats, out.chat.id)[-1] == "final answer"
    history = chats.history(out.chat.id, node.id)
    assert [v.content for v in history] == ["typo answr", "typo answer", "final answer"]
    assert history[0].revision < history[1].revision < history[2].revision
    first_user = chats.active_path(out.chat.id).entries[1].node
    out = chats.edit(out.chat.id, first_user.id, "hello there", revision=out.chat.revision)
    assert texts(chats, out.chat.id) == ["Hello.", "hello there", "final answer"]


def test_edit_and_resend_leaves_the_old_turn_as_a_branch(chats: ChatService) -> None:
    out = conversation(chats, "go left", "you went left", "and then?", "a cave")
    cid = out.chat.id
    user = chats.active_path(cid).entries[1].node
    out = chats.edit_and_resend(cid, user.id, "go right", revision=out.chat.revision)
    assert texts(chats, cid) == ["Hello.", "go right"]
    entry = chats.active_path(cid).entries[1]
    assert (entry.candidate_index, entry.candidate_count) == (1, 2)
    out = chats.append(cid, BOT, "you went right", revision=out.chat.revision)
    out = chats.select_candidate(cid, user.id, revision=out.chat.revision)
    assert texts(chats, cid) == ["Hello.", "go left", "you went left", "and then?", "a cave"]
    bot = chats.active_path(cid).entries[2].node
    with pytest.raises(TavernaError, match="user message"):
        chats.edit_and_resend(cid, bot.id, "nope", revision=out.chat.revision)


def test_hide_single_and_ranges(chats: ChatService) -> None:
    out = conversation(chats, "a", "b", "c", "d")
    cid = out.chat.id
    out = chats.hide_range(cid, 0, 2, revision=out.chat.revision)
    path = chats.active_path(cid)
    assert [e.node.hidden for e in path.entries] == [True, True, True, False, False]
    assert [n.content for n in path.for_model()] == ["c", "d"]
    out = chats.hide_range(cid, 1, 1, revision=out.chat.revision, hidden=False)
    assert [n.content for n in chats.active_path(cid).for_model()] == ["a", "c", "d"]
    for bad in ((2, 1), (-1, 2), (0, 5)):
        with pytest.raises(TavernaError, match="range"):
            chats.hide_range(cid, *bad, revision=out.chat.revision)
    last = chats.active_path(cid).entries[-1].node
    out = chats.set_hidden(cid, [last.id], True, revision=out.chat.revision)
    assert [n.content for n in chats.active_path(cid).for_model()] == ["a", "c"]
    assert len(chats.active_path(cid).entries) == 5  # still shown to the person


def test_delete_is_a_restorable_tombstone(chats: ChatService) -> None:
    out = conversation(chats, "a", "b", "c")
    cid = out.chat.id
    middle = chats.active_path(cid).entries[2].node
    out = chats.delete(cid, middle.id, revision=out.chat.revision)
    assert texts(chats, cid) == ["Hello.", "a", "c"]
    with_deleted = chats.active_path(cid, include_deleted=True)
    assert [e.node.deleted for e in with_deleted.entries] == [False, False, True, False]
    assert [e.position for e in chats.active_path(cid).entries] == [0, 1, 2]
    out = chats.restore(cid, middle.id, revision=out.chat.revision)
    assert texts(chats, cid) == ["Hello.", "a", "b", "c"]
    with pytest.raises(TavernaError, match="not deleted"):
        chats.restore(cid, middle.id, revision=out.chat.revision)


def test_deleting_the_last_swipe_shows_the_next_candidate(chats: ChatService) -> None:
    out = conversation(chats, "a", "one")
    cid = out.chat.id
    assert out.node is not None
    first = out.node
    out = chats.swipe(cid, first.id, "two", revision=out.chat.revision)
    assert out.node is not None
    second = out.node
    out = chats.swipe(cid, first.id, "three", revision=out.chat.revision)
    out = chats.select_candidate(cid, second.id, revision=out.chat.revision)
    out = chats.delete(cid, second.id, revision=out.chat.revision)
    assert texts(chats, cid)[-1] == "three"
    entry = chats.active_path(cid).entries[-1]
    assert (entry.candidate_index, entry.candidate_count) == (1, 2)
    out = chats.delete(cid, entry.node.id, revision=out.chat.revision)
    assert texts(chats, cid)[-1] == "one"
    out = chats.delete(cid, first.id, revision=out.chat.revision)
    assert texts(chats, cid) == ["Hello.", "a"]
    out = chats.append(cid, BOT, "fresh", revision=out.chat.revision)
    assert texts(chats, cid) == ["Hello.", "a", "fresh"]
    assert chats.active_path(cid).entries[-1].candidate_count == 1


def test_delete_from_here_truncates_and_undo_brings_it_back(chats: ChatService) -> None:
    out = conversation(chats, "a", "b", "c", "d")
    cid = out.chat.id
    at = chats.active_path(cid).entries[2].node
    before = out.chat.revision
    out = chats.delete_from_here(cid, at.id, revision=out.chat.revision)
    assert texts(chats, cid) == ["Hello.", "a"]
    assert out.chat.revision == before + 1
    out = chats.append(cid, BOT, "new b", revision=out.chat.revision)
    assert texts(chats, cid) == ["Hello.", "a", "new b"]
    out = chats.undo(cid, revision=out.chat.revision)
    out = chats.undo(cid, revision=out.chat.revision)
    assert texts(chats, cid) == ["Hello.", "a", "b", "c", "d"]


def test_branches_named_listed_and_switched(chats: ChatService) -> None:
    out = conversation(chats, "a", "b", "c", "d")
    cid = out.chat.id
    fork = chats.active_path(cid).entries[2].node  # "b"
    out = chats.branch_from(cid, fork.id, "what if", revision=out.chat.revision)
    assert texts(chats, cid) == ["Hello.", "a", "b"]
    out = chats.append(cid, USER, "other c", revision=out.chat.revision)
    out = chats.append(cid, BOT, "other d", revision=out.chat.revision)
    listed = {b.branch.name: b for b in chats.list_branches(cid)}
    assert set(listed) == {"main", "what if"}
    assert listed["what if"].active and listed["what if"].length == 5
    assert listed["what if"].last_message is not None
    assert listed["what if"].last_message.content == "other d"
    assert listed["main"].length == 5 and listed["main"].last_message is not None
    assert listed["main"].last_message.content == "d"
    out = chats.switch_branch(cid, listed["main"].branch.id, revision=out.chat.revision)
    assert texts(chats, cid) == ["Hello.", "a", "b", "c", "d"]
    fork_entry = chats.active_path(cid).entries[3]
    assert (fork_entry.candidate_index, fork_entry.candidate_count) == (0, 2)
    out = chats.switch_branch(cid, listed["what if"].branch.id, revision=out.chat.revision)
    assert texts(chats, cid) == ["Hello.", "a", "b", "other c", "other d"]
    with pytest.raises(TavernaError, match="exists"):
        chats.branch_from(cid, fork.id, "main", revision=out.chat.revision)
    with pytest.raises(TavernaError, match="another branch"):
        chats.delete_branch(cid, listed["what if"].branch.id, revision=out.chat.revision)
    out = chats.rename_branch(cid, listed["main"].branch.id, "first", revision=out.chat.revision)
    out = chats.delete_branch(cid, listed["main"].branch.id, revision=out.chat.revision)
    assert [b.branch.name for b in chats.list_branches(cid)] == ["what if"]
    assert "d" in [n.content for n in chats.store.tree(cid).nodes]  # messages stay


def test_checkpoints_point_at_a_message(chats: ChatService) -> None:
    out = conversation(chats, "a", "b")
    cid = out.chat.id
    node = chats.active_path(cid).entries[1].node
    out, checkpoint = chats.create_checkpoint(
        cid, node.id, "before the fight", revision=out.chat.revision
    )
    out = chats.append(cid, USER, "c", revision=out.chat.revision)
    [listed] = chats.list_checkpoints(cid)
    assert (listed.name, listed.node_id) == ("before the fight", node.id)
    with pytest.raises(TavernaError, match="exists"):
        chats.create_checkpoint(cid, node.id, "before the fight", revision=out.chat.revision)
    out = chats.branch_from(cid, checkpoint.node_id, "from checkpoint", revision=out.chat.revision)
    assert texts(chats, cid) == ["Hello.", "a"]
    out = chats.delete_checkpoint(cid, checkpoint.id, revision=out.chat.revision)
    assert chats.list_checkpoints(cid) == []
    with pytest.raises(NotFound):
        chats.delete_checkpoint(cid, checkpoint.id, revision=out.chat.revision)


def test_opening_a_checkpoint_leaves_every_branch_where_it_was(chats: ChatService) -> None:
    out = conversation(chats, "a", "b", "c", "d", "e", "f")
    cid = out.chat.id
    nodes = chats.active_path(cid).nodes
    assert len(nodes) == 7

    def heads() -> dict[str, tuple[str | None, int, bool]]:
        return {
            b.branch.name: (b.branch.head_id, b.length, b.active) for b in chats.list_branches(cid)
        }

    out = chats.branch_from(cid, nodes[4].id, "side", revision=out.chat.revision, switch=False)
    out, checkpoint = chats.create_checkpoint(cid, nodes[3].id, "cp", revision=out.chat.revision)
    before = heads()
    assert before["main"] == (nodes[6].id, 7, True)
    out = chats.open_checkpoint(cid, checkpoint.id, revision=out.chat.revision)
    # The checkpoint's path is shown; "main" still ends at #7, "side" at #5.
    assert [n.id for n in chats.active_path(cid).nodes] == [n.id for n in nodes[:4]]
    assert heads() == {"main": (nodes[6].id, 7, False), "side": (nodes[4].id, 5, False)}
    # Writing on the checkpoint's path moves no branch either.
    out = chats.append(cid, USER, "other way", revision=out.chat.revision)
    assert heads()["main"] == (nodes[6].id, 7, False)
    # Undo step by step: the message goes, then the checkpoint's path, main is back.
    out = chats.undo(cid, revision=out.chat.revision)
    assert texts(chats, cid) == ["Hello.", "a", "b", "c"]
    out = chats.undo(cid, revision=out.chat.revision)
    assert [n.id for n in chats.active_path(cid).nodes] == [n.id for n in nodes]
    assert heads() == before
    # Switching to main after a checkpoint brings main's whole path back.
    out = chats.redo(cid, revision=out.chat.revision)
    main = next(b for b in chats.list_branches(cid) if b.branch.name == "main")
    out = chats.switch_branch(cid, main.branch.id, revision=out.chat.revision)
    assert [n.id for n in chats.active_path(cid).nodes] == [n.id for n in nodes]


def test_undo_takes_back_every_move_one_step_at_a_time(chats: ChatService) -> None:
    out = conversation(chats, "a", "b", "c", "d")
    cid = out.chat.id
    nodes = chats.active_path(cid).nodes
    out = chats.swipe(cid, nodes[2].id, "b2", revision=out.chat.revision)  # a fork at #2
    out = chats.select_candidate(cid, nodes[2].id, revision=out.chat.revision)
    out = chats.branch_from(cid, nodes[1].id, "side", revision=out.chat.revision, switch=False)
    out, checkpoint = chats.create_checkpoint(cid, nodes[1].id, "cp", revision=out.chat.revision)
    main_id = next(b.branch.id for b in chats.list_branches(cid) if b.branch.name == "main")
    side_id = next(b.branch.id for b in chats.list_branches(cid) if b.branch.name == "side")
    seen = [texts(chats, cid)]
    moves = [
        lambda r: chats.step_candidate(cid, nodes[2].id, 1, revision=r),
        lambda r: chats.open_checkpoint(cid, checkpoint.id, revision=r),
        lambda r: chats.switch_branch(cid, side_id, revision=r),
        lambda r: chats.switch_branch(cid, main_id, revision=r),
        lambda r: chats.step_candidate(cid, nodes[2].id, 1, revision=r),
    ]
    for move in moves:
        out = move(out.chat.revision)
        seen.append(texts(chats, cid))
    assert len({tuple(s) for s in seen}) > 2
    for expected in reversed(seen[:-1]):
        out = chats.undo(cid, revision=out.chat.revision)
        assert texts(chats, cid) == expected


def test_state_switches_with_candidates_and_branches(chats: ChatService) -> None:
    out = chats.create_chat("c", base_state=ChatState(variables={"hp": 10}))
    cid = out.chat.id
    out = chats.append(cid, USER, "attack", revision=out.chat.revision)
    out = chats.append(
        cid, BOT, "hit", revision=out.chat.revision, state=ChatState(variables={"hp": 7})
    )
    assert out.node is not None
    hit = out.node
    out = chats.swipe(
        cid,
        hit.id,
        "miss",
        revision=out.chat.revision,
        state=ChatState(variables={"hp": 10}, summary="missed"),
    )
    assert chats.state_at(cid).variables == {"hp": 10}
    assert chats.state_at(cid).summary == "missed"
    out = chats.select_candidate(cid, hit.id, revision=out.chat.revision)
    assert chats.state_at(cid).variables == {"hp": 7}
    out = chats.append(cid, USER, "again", revision=out.chat.revision)
    assert chats.active_path(cid).state.variables == {"hp": 7}
    out = chats.update_state(
        cid, revision=out.chat.revision, authors_note=AuthorsNote(prompt="Be terse.", depth=2)
    )
    state = chats.state_at(cid)
    assert state.variables == {"hp": 7} and state.authors_note == AuthorsNote("Be terse.", depth=2)
    # a branch from before the note inherits the state up to its fork point only
    out = chats.branch_from(cid, hit.id, "retry", revision=out.chat.revision)
    assert chats.state_at(cid).variables == {"hp": 7}
    assert chats.state_at(cid).authors_note is None
    out = chats.write_state(cid, None, ChatState(variables={"hp": 99}), revision=out.chat.revision)
    assert chats.state_at(cid, chats.active_path(cid).entries[0].node.id).variables == {"hp": 99}


def test_timers_are_kept_verbatim(chats: ChatService) -> None:
    timers = {"sticky": {"book.3": {"start": 4, "end": 7, "protected": False}}, "cooldown": {}}
    out = conversation(chats, "a")
    out = chats.update_state(out.chat.id, revision=out.chat.revision, timers=timers)
    assert chats.state_at(out.chat.id).timers == timers


def test_undo_and_redo_every_kind_of_operation(chats: ChatService) -> None:
    out = conversation(chats, "a", "b")
    cid = out.chat.id

    def snapshot() -> tuple[object, ...]:
        path = chats.active_path(cid, include_deleted=True)
        return (
            [
                (e.node.id, e.node.content, e.node.hidden, e.node.deleted, e.candidate_count)
                for e in path.entries
            ],
            [(b.branch.name, b.branch.head_id, b.active) for b in chats.list_branches(cid)],
            [(c.name, c.node_id) for c in chats.list_checkpoints(cid)],
            chats.state_at(cid),
        )

    leaf = chats.active_path(cid).entries[-1].node
    first = chats.active_path(cid).entries[1].node
    operations = [
        lambda r: chats.append(cid, USER, "c", revision=r),
        lambda r: chats.swipe(cid, leaf.id, "b2", revision=r),
        lambda r: chats.select_candidate(cid, leaf.id, revision=r),
        lambda r: chats.edit(cid, leaf.id, "b edited", revision=r),
        lambda r: chats.edit_and_resend(cid, first.id, "a2", revision=r),
        lambda r: chats.select_candidate(cid, first.id, revision=r),
        lambda r: chats.hide_range(cid, 0, 1, revision=r),
        lambda r: chats.delete(cid, first.id, revision=r),
        lambda r: chats.restore(cid, first.id, revision=r),
        lambda r: chats.delete_from_here(cid, leaf.id, revision=r),
        lambda r: chats.branch_from(cid, first.id, "side", revision=r),
        lambda r: chats.create_checkpoint(cid, first.id, "cp", revision=r)[0],
        lambda r: chats.update_state(cid, revision=r, summary="so far"),
    ]
    revision = out.chat.revision
    for operation in operations:
        before = snapshot()
        after_out = operation(revision)
        after = snapshot()
        assert after != before
        undone = chats.undo(cid, revision=after_out.chat.revision)
        assert snapshot() == before
        redone = chats.redo(cid, revision=undone.chat.revision)
        assert snapshot() == after
        revision = redone.chat.revision
    # undo everything back to the start, then redo it all
    states = []
    while True:
        states.append(snapshot())
        try:
            revision = chats.undo(cid, revision=revision).chat.revision
        except NotFound:
            break
    assert texts(chats, cid) == []
    for expected in reversed(states[:-1]):
        revision = chats.redo(cid, revision=revision).chat.revision
        assert snapshot() == expected
    with pytest.raises(NotFound, match="redo"):
        chats.redo(cid, revision=revision)


def test_a_new_operation_ends_redo(chats: ChatService) -> None:
    out = conversation(chats, "a", "b")
    cid = out.chat.id
    out = chats.undo(cid, revision=out.chat.revision)
    out = chats.append(cid, BOT, "other b", revision=out.chat.revision)
    with pytest.raises(NotFound, match="redo"):
        chats.redo(cid, revision=out.chat.revision)
    out = chats.undo(cid, revision=out.chat.revision)
    assert texts(chats, cid) == ["Hello.", "a"]
    out = chats.undo(cid, revision=out.chat.revision)  # skips the already-undone "b"
    assert texts(chats, cid) == ["Hello."]
    kinds = [r.kind.value for r in chats.revisions(cid)[:3]]
    assert kinds == ["undo", "undo", "operation"]


def test_operations_on_deleted_or_unknown_messages_fail_cleanly(chats: ChatService) -> None:
    out = conversation(chats, "a", "b")
    cid = out.chat.id
    node = chats.active_path(cid).entries[1].node
    out = chats.delete(cid, node.id, revision=out.chat.revision)
    with pytest.raises(TavernaError, match="deleted"):
        chats.swipe(cid, node.id, "x", revision=out.chat.revision)
    with pytest.raises(NotFound):
        chats.edit(cid, "no-such-node", "x", revision=out.chat.revision)
    with pytest.raises(TavernaError, match="name"):
        chats.branch_from(
            cid, chats.active_path(cid).entries[0].node.id, "  ", revision=out.chat.revision
        )
    assert chats.get_chat(cid).revision == out.chat.revision


def test_rename_and_metadata_are_undoable_revisions(chats: ChatService) -> None:
    out = chats.create_chat("old", metadata={"world_info": "Eldoria", "tainted": True})
    cid = out.chat.id
    out = chats.rename_chat(cid, "  new title ", revision=out.chat.revision)
    assert out.chat.title == "new title"
    out = chats.update_metadata(
        cid, {"world_info": None, "scenario": "A storm."}, revision=out.chat.revision
    )
    assert out.chat.metadata == {"tainted": True, "scenario": "A storm."}
    out = chats.undo(cid, revision=out.chat.revision)
    assert out.chat.metadata == {"world_info": "Eldoria", "tainted": True}
    out = chats.undo(cid, revision=out.chat.revision)
    assert out.chat.title == "old"
    with pytest.raises(TavernaError, match="name"):
        chats.rename_chat(cid, " ", revision=out.chat.revision)


def test_tail_reads_the_end_of_a_long_path_with_true_positions(chats: ChatService) -> None:
    out = conversation(chats, *[f"line {i}" for i in range(30)])
    cid = out.chat.id
    whole = chats.active_path(cid)
    out = chats.delete(cid, whole.entries[3].node.id, revision=out.chat.revision)
    whole = chats.active_path(cid)
    window = chats.active_path(cid, tail=4)
    assert window.entries == whole.entries[-4:]
    assert [e.position for e in window.entries] == [26, 27, 28, 29]
    assert chats.active_path(cid, tail=1000).entries == whole.entries
    assert chats.active_path(cid, tail=0).entries == ()


def test_swipe_arrows_cost_the_same_at_any_length(chats: ChatService) -> None:
    import sqlalchemy as sa

    def statements_for_a_swipe_round(lines: int) -> int:
        out = conversation(chats, *[f"line {i}" for i in range(lines)])
        cid = out.chat.id
        assert out.node is not None
        out = chats.swipe(cid, out.node.id, "other", revision=out.chat.revision)
        seen: list[str] = []

        def count(conn: object, cursor: object, statement: str, *args: object) -> None:
            seen.append(statement)

        engine = chats.store.engine  # type: ignore[attr-defined]
        sa.event.listen(engine, "before_cursor_execute", count)
        try:
            assert out.node is not None
            out = chats.step_candidate(cid, out.node.id, 1, revision=out.chat.revision)
        finally:
            sa.event.remove(engine, "before_cursor_execute", count)
        assert texts(chats, cid)[-1] == f"line {lines - 1}"
        return len(seen)

    assert statements_for_a_swipe_round(5) == statements_for_a_swipe_round(60)


def test_branch_lists_kept_by_revision_follow_every_write(chats: ChatService) -> None:
    """The list kept for a revision is what the store says at that revision, after each
    kind of write, and asking again at the same revision reads nothing."""
    out = conversation(chats, "a", "b", "c", "d")
    cid = out.chat.id
    reads: list[str] = []
    store_branches = chats.store.branches

    def counted(chat_id: str) -> list[BranchSummary]:
        reads.append(chat_id)
        return store_branches(chat_id)

    chats.store.branches = counted  # type: ignore[method-assign]

    def check(result: WriteResult) -> WriteResult:
        kept = chats.list_branches(cid, revision=result.chat.revision)
        assert kept == store_branches(cid)
        before = len(reads)
        assert chats.list_branches(cid, revision=result.chat.revision) == kept
        assert len(reads) == before
        return result

    check(out)
    path = chats.active_path(cid).entries
    out = check(chats.edit(cid, path[-1].node.id, "d, edited", revision=out.chat.revision))
    out = check(chats.set_hidden(cid, [path[-1].node.id], True, revision=out.chat.revision))
    out = check(chats.branch_from(cid, path[2].node.id, "what if", revision=out.chat.revision))
    out = check(chats.append(cid, USER, "other c", revision=out.chat.revision))
    last = chats.active_path(cid).entries[-1].node
    out = check(chats.delete(cid, last.id, revision=out.chat.revision))
    main = next(b for b in chats.list_branches(cid) if b.branch.name == "main")
    out = check(chats.switch_branch(cid, main.branch.id, revision=out.chat.revision))
    out = check(chats.rename_branch(cid, main.branch.id, "first", revision=out.chat.revision))
    check(chats.undo(cid, revision=out.chat.revision))


def test_insert_at_a_place_keeps_the_old_path_as_a_candidate(chats: ChatService) -> None:
    out = conversation(chats, "a", "b", "c")
    cid = out.chat.id
    old_b = chats.active_path(cid).entries[2].node
    out = chats.hide_range(cid, 3, 3, revision=out.chat.revision)
    out = chats.insert_at(cid, 2, NodeRole.NARRATOR, "aside", revision=out.chat.revision)
    assert out.node is not None and out.node.content == "aside"
    path = chats.active_path(cid)
    assert [n.content for n in path.nodes] == ["Hello.", "a", "aside", "b", "c"]
    assert [n.hidden for n in path.nodes] == [False, False, False, False, True]
    assert path.nodes[3].id != old_b.id  # the later messages continue as copies
    # Nothing is lost: the path as it was is the other candidate at that place.
    assert old_b.id in [n.id for n in chats.candidates(cid, out.node.id)]
    out = chats.insert_at(cid, 0, USER, "first", revision=path.chat.revision)
    assert texts(chats, cid) == ["first", "Hello.", "a", "aside", "b", "c"]
    out = chats.insert_at(cid, 6, USER, "end", revision=out.chat.revision)
    assert texts(chats, cid)[-1] == "end"
