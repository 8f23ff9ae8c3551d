"""What a process keeps between turns is bounded by bytes: the least recently used go
past the budget, the one in use stays whatever its size."""

from __future__ import annotations

from taverna.services.kept_bytes import KeptBytes, text_bytes


def _sized(kept: dict[str, int]) -> KeptBytes[str, str]:
    return KeptBytes(100, lambda key, _value: kept[key])


def test_the_least_recently_used_go_past_the_budget() -> None:
    sizes = {"a": 40, "b": 40, "c": 40}
    kept = _sized(sizes)
    kept.put("a", "A")
    kept.put("b", "B")
    assert kept.get("a") == "A"  # now the most recent: b is the oldest
    kept.put("c", "C")
    assert "b" not in kept and "a" in kept and "c" in kept
    assert kept.held == 80


def test_the_value_in_use_stays_whatever_its_size() -> None:
    sizes = {"a": 10, "big": 500}
    kept = _sized(sizes)
    kept.put("a", "A")
    kept.put("big", "BIG")
    assert list(sizes) == ["a", "big"] and "big" in kept and "a" not in kept
    assert kept.held == 500


def test_a_value_that_grows_is_measured_again() -> None:
    sizes = {"a": 10, "b": 10}
    kept = _sized(sizes)
    kept.put("a", "A")
    kept.put("b", "B")
    sizes["b"] = 95  # read further in place
    kept.touch("b")
    assert "a" not in kept and kept.held == 95
    assert kept.pop("b") == "B" and kept.held == 0 and len(kept) == 0


def test_text_bytes_count_the_characters_and_the_string() -> None:
    assert text_bytes(["abcd"]) > text_bytes(["ab"]) > 0
