"""A group reply cut where it starts another member's line."""

from __future__ import annotations

from taverna.engine.group import cut_at_other_speaker

MEMBERS = ["Alice", "Bob", "小雪"]


def test_cut_at_another_members_line() -> None:
    text = "Hello there.\nBob: And me!\nAlice: again"
    assert cut_at_other_speaker(text, "Alice", MEMBERS) == "Hello there."


def test_own_name_and_names_inside_a_line_do_not_cut() -> None:
    text = "Alice: I said Bob: hi.\nAlice: still me"
    assert cut_at_other_speaker(text, "Alice", MEMBERS) == text


def test_a_reply_that_starts_as_another_member_is_empty() -> None:
    assert cut_at_other_speaker("小雪: 你好", "Alice", MEMBERS) == ""
