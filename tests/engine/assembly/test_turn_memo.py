"""TurnMemo keeps what recent turns used and lets the rest go."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from taverna.engine.assembly.memo import TurnMemo


def test_an_entry_lasts_while_turns_use_it() -> None:
    memo = TurnMemo()
    memo["a"] = 1
    memo["b"] = 2
    memo.next_turn()
    assert memo.get("a") == 1  # used this turn: kept for the next
    memo.next_turn()
    assert memo.get("a") == 1
    assert memo.get("b") is None  # unused for a whole turn: gone
    assert memo.get("b", "none") == "none"
    assert len(memo) == 1


# A turn: the keys it reads and the keys it writes (with their values).
_turns = st.lists(
    st.tuples(
        st.lists(st.integers(0, 9), max_size=6),
        st.dictionaries(st.integers(0, 9), st.integers(), max_size=4),
    ),
    max_size=12,
)


@given(_turns)
def test_it_answers_like_a_dict_of_what_the_last_two_turns_touched(
    turns: list[tuple[list[int], dict[int, int]]],
) -> None:
    memo = TurnMemo()
    latest: dict[int, int] = {}  # every key's last value
    touched: list[set[int]] = []  # the keys each turn read (found) or wrote
    for reads, writes in turns:
        memo.next_turn()
        alive = touched[-1] if touched else set()
        now: set[int] = set()
        for key in reads:
            expected = latest.get(key) if key in alive or key in now else None
            assert memo.get(key) == expected
            if expected is not None:
                now.add(key)
        for key, value in writes.items():
            memo[key] = value
            latest[key] = value
            now.add(key)
        touched.append(now)
        assert len(memo) <= len(now) + len(alive)
