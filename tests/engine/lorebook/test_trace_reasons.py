"""Each reason of the lorebook trace has a code and params (a page says it in its language by
them) and its English text is the code's sentence filled with the params."""

from __future__ import annotations

from taverna.model.lorebook import REASON_TEXTS, Reason, SelectiveLogic

from .helpers import entry, run


def test_every_reason_in_the_trace_has_a_code_that_says_it() -> None:
    entries = [
        entry(0, "dragon"),
        entry(1, "unicorn"),
        entry(2, "dragon", disable=True),
        entry(
            3,
            "sword",
            keysecondary=("fire", "ice"),
            selective_logic=SelectiveLogic.AND_ALL,
        ),
        entry(4, content="always", constant=True),
    ]
    result = run(entries, "a dragon with a sword of fire")
    trace = {t.uid: t for t in result.trace()}
    for record in trace.values():
        assert record.code in REASON_TEXTS, record
        assert Reason(record.code, record.params).text == record.reason
        assert record.to_json()["code"] == record.code
    assert (trace[0].code, dict(trace[0].params)) == ("primary_key", {"key": "dragon"})
    assert trace[0].reason == "primary key 'dragon'"
    assert trace[1].code == "no_primary_key"
    assert trace[2].code == "disabled"
    assert trace[3].code == "secondary_fail"
    assert dict(trace[3].params) == {"key": "sword", "logic": "AND ALL"}
    assert trace[4].code == "constant"


def test_a_reason_from_outside_the_scan_keeps_its_words() -> None:
    given = Reason("", given="found by a plugin")
    assert given.text == "found by a plugin" and given.code == ""
    stopped = Reason("no_primary_key", {"stopped": 1})
    assert stopped.text.startswith("no primary key found in the scanned text (a regex key")
