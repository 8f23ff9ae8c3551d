"""A chat's message ids held in arrays: every id finds its row, before and after the
recent ones are merged into the sorted hashes, and the arrays cost about half of a list
and a dict of strings."""

from __future__ import annotations

import sys
import uuid

from taverna.services.memory.recall import message_ids
from taverna.services.memory.recall.message_ids import MessageIds


def test_every_id_finds_its_row_across_merges() -> None:
    ids = MessageIds()
    made = [str(uuid.uuid4()) for _ in range(message_ids.MERGE_AT * 2 + 10)] + ["n1", "é-2"]
    for i, node_id in enumerate(made):
        assert ids.row(node_id) is None
        assert ids.add(node_id) == i
    assert len(ids) == len(made)
    assert all(ids.row(node_id) == i for i, node_id in enumerate(made))
    assert [ids[i] for i in (0, len(made) - 2, len(made) - 1)] == [made[0], "n1", "é-2"]
    ids.merge()
    assert all(ids.row(node_id) == i for i, node_id in enumerate(made))
    assert ids.row("absent") is None


def test_the_arrays_cost_less_than_a_list_and_a_dict() -> None:
    made = [str(uuid.uuid4()) for _ in range(20_000)]
    ids = MessageIds()
    for node_id in made:
        ids.add(node_id)
    ids.merge()
    rows = {node_id: i + 1000 for i, node_id in enumerate(made)}
    listed = sys.getsizeof(made) + sum(sys.getsizeof(s) for s in made)
    as_objects = listed + sys.getsizeof(rows) + 28 * len(rows)
    assert ids.nbytes < as_objects * 0.6  # about 52 bytes an id, with room to grow
