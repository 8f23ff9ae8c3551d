"""Which runs of the local model's computed tokens a new prompt can take over after a
difference (llama.cpp's cache reuse), as plain token lists."""

from __future__ import annotations

from taverna.services.connections.local_slots import chunk_moves, shared_prefix


def test_the_last_reply_after_a_dropped_volatile_part_is_moved_into_place() -> None:
    stable, volatile, reply = list(range(100)), [900, 901, 902], list(range(200, 240))
    live = [*stable, *volatile, 7, *reply]  # 7: the reply's turn opens after the notes
    prompt = [*stable, 7, *reply, 300, 301, 903, 7]
    shared = shared_prefix(live, prompt)
    assert shared == 100
    assert chunk_moves(live, prompt, shared, 16) == [(103, 100, 41)]


def test_runs_shorter_than_the_chunk_are_computed_again() -> None:
    live = [1, 2, 3, 9, 9, 4, 5]
    prompt = [1, 2, 3, 4, 5, 6]
    assert chunk_moves(live, prompt, 3, 3) == []
    assert chunk_moves(live, prompt, 3, 2) == [(5, 3, 2)]


def test_nothing_moves_when_the_chunk_is_zero_or_nothing_follows() -> None:
    assert chunk_moves([1, 2, 3], [1, 2, 4], 2, 0) == []
    assert chunk_moves([1, 2], [1, 2, 3], 2, 1) == []
