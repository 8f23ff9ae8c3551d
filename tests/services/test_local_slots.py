"""Which runs of the local model's computed tokens a new prompt can take over after a
difference (llama.cpp's cache reuse), as plain token lists."""

from __future__ import annotations

from taverna.services.connections.local_slots import chunk_plan, shared_prefix

BLANK = 10  # a line break


def blank(token: int) -> bool:
    return token == BLANK


def test_the_last_reply_after_a_dropped_volatile_part_is_moved_into_place() -> None:
    stable, volatile, reply = list(range(100)), [900, 901, 902], list(range(200, 240))
    live = [*stable, *volatile, 7, *reply]  # 7: the reply's turn opens after the notes
    prompt = [*stable, 7, *reply, 300, 301, 903, 7]
    shared = shared_prefix(live, prompt)
    assert shared == 100
    plan = chunk_plan(live, prompt, shared, 16)
    assert plan.segments == ((103, 41),)
    assert (plan.tokens, plan.head) == (prompt, 141)


def test_runs_shorter_than_the_chunk_are_computed_again() -> None:
    live = [1, 2, 3, 9, 9, 4, 5]
    prompt = [1, 2, 3, 4, 5, 6]
    assert chunk_plan(live, prompt, 3, 3).segments == ()
    assert chunk_plan(live, prompt, 3, 2).segments == ((5, 2),)


def test_a_reply_begun_with_a_line_break_keeps_it() -> None:
    """The model began its reply with a line break the stored reply does not keep: the
    prompt is given with the model's own, and the reply is not computed again."""
    stable, reply = list(range(50)), list(range(200, 230))
    live = [*stable, 900, 901, 7, BLANK, BLANK, *reply]
    prompt = [*stable, 7, BLANK, *reply, 300]
    plan = chunk_plan(live, prompt, 50, 16, blank)
    assert plan.segments == ((52, 33),)  # the turn's opening, both line breaks, the reply
    assert plan.tokens == [*stable, 7, BLANK, BLANK, *reply, 300]
    assert plan.head == 83


def test_only_blank_tokens_may_differ_before_a_run() -> None:
    live = [1, 2, 900, 7, 5, *range(20, 40)]
    prompt = [1, 2, 7, 6, *range(20, 40)]  # 5 and 6 are no blanks: computed again
    assert chunk_plan(live, prompt, 2, 8, blank).segments == ()
    assert chunk_plan(live, prompt, 2, 8, blank, fresh=0).segments == ()


def test_nothing_moves_when_the_chunk_is_zero_or_nothing_follows() -> None:
    assert chunk_plan([1, 2, 3], [1, 2, 4], 2, 0).segments == ()
    assert chunk_plan([1, 2, 5, 5, 5], [1, 2, 4, 5, 5, 5], 2, 3, fresh=0).segments == ()
