"""SillyTavern chat JSONL: reading, writing, round trips, errors."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taverna.errors import FormatError, FormatWarning
from taverna.formats.json_text import json_number
from taverna.formats.st_chat import (
    FORKS,
    MessageLine,
    Swipe,
    document,
    dump_json,
    format_send_date,
    make_message,
    parse_send_date,
    read_chat,
    write_chat,
)


def chat_files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.jsonl"))


def json_lines(text: str) -> list[object]:
    """The JSON values of each line, numbers compared as JavaScript does (as doubles)."""
    return [json.loads(line, parse_int=float) for line in text.split("\n") if line.strip()]


def test_fixtures_round_trip_byte_for_byte(st_fixtures: Path) -> None:
    files = chat_files(st_fixtures)
    assert len(files) >= 4
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert write_chat(read_chat(text, source=path.name)) == text, path.name


def test_oracle_chats_round_trip_as_json_values(oracle_cases: Path) -> None:
    files = sorted(oracle_cases.glob("*/chat.jsonl"))
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        out = write_chat(read_chat(text, source=str(path)))
        assert json_lines(out) == json_lines(text), path
        # the writer uses SillyTavern's compact form whatever the input spacing was
        assert ", " not in out.split("\n")[0]


def test_solo_chat_fields(st_fixtures: Path) -> None:
    path = next(st_fixtures.rglob("Seraphina - 2024-09-28@14h03m12s.jsonl"))
    doc = read_chat(path.read_bytes(), source=path.name)
    assert not doc.is_group
    assert doc.header is not None and doc.header.user_name == "Traveler"
    meta = doc.metadata
    assert meta.note_prompt == "[Keep replies under 120 words.]"
    assert meta.world_info == "Glade Lore"
    assert meta.variables["visits"] == 2
    assert "Glade Lore.1" in meta.timed_world_info["cooldown"]
    assert meta.main_chat is None
    greeting, user, reply, *_ = doc.messages
    assert greeting.swipes is not None and len(greeting.swipes) == 2
    assert greeting.swipes[1].info is None  # greeting swipe_info is empty
    assert greeting.swipes_consistent
    assert user.is_user and not user.hidden
    assert reply.swipe_id == 1 and reply.swipes is not None
    assert reply.swipes[0].info is not None and reply.swipes[0].info["send_date"] == (
        "September 28, 2024 2:04pm"
    )
    assert reply.text == reply.swipes[1].text
    kinds = [(m.name, m.hidden, m.is_narrator) for m in doc.messages[4:6]]
    assert kinds == [("System", False, True), ("Note", True, False)]


def test_checkpoint_links_to_main(st_fixtures: Path) -> None:
    path = next(st_fixtures.rglob("Checkpoint #1*.jsonl"))
    doc = read_chat(path.read_text(encoding="utf-8"))
    assert doc.main_chat == "Seraphina - 2024-09-28@14h03m12s"
    assert len(doc.messages) == 3


def test_group_chat_without_header_keeps_huge_numbers(st_fixtures: Path) -> None:
    path = next(st_fixtures.rglob("group chats/*.jsonl"))
    text = path.read_text(encoding="utf-8")
    doc = read_chat(text)
    assert doc.is_group and doc.header is None
    assert doc.messages[0].extra["gen_id"] == 1289034567123847200
    assert "1289034567123847200" in write_chat(doc)


def test_newer_header_is_read(st_fixtures: Path) -> None:
    path = next(st_fixtures.rglob("newer-format/**/*.jsonl"))
    doc = read_chat(path.read_text(encoding="utf-8"))
    assert doc.header is not None and doc.header.user_name == "unused"
    assert doc.metadata.integrity == "3b6f0d8e-9a4c-4f6e-8d5a-2f1e7c9b0a11"
    assert doc.messages[2].extra["reasoning_duration"] == 2412


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ('{"user_name":"a"}\n{"name":"x","mes":[5]}', 2, "mes"),
        ('{"user_name":"a"}\n{"name":"x","mes":"hi","swipes":["a",{}]}', 2, "swipes"),
        ('{"user_name":"a","chat_metadata":[]}', 1, "chat_metadata"),
        ('{"user_name":"a"}\n{"name":"x","mes":"a","is_user":{}}', 2, "is_user"),
        ('{"user_name":"a"}\n{"name":"x","mes":"a","swipe_id":[1]}', 2, "swipe_id"),
        ('{"user_name":"a"}\n{"name":"x","mes":{"message":"chub"}}', 2, "mes"),
        ('{"user_name":["a"]}', 1, "user_name"),
    ],
)
def test_wrong_field_types_name_file_line_and_field(text: str, line: int, field: str) -> None:
    with pytest.raises(FormatError) as info:
        read_chat(text, source="bad.jsonl")
    assert info.value.file == "bad.jsonl"
    assert info.value.field == field
    assert f"line {line}" in str(info.value)


@pytest.mark.parametrize(
    ("text", "field", "read"),
    [
        ('{"user_name":"a"}\n{"name":"x","mes":5}', "mes", lambda m: m.text == "5"),
        ('{"user_name":"a"}\n{"name":"x","mes":"a","swipes":["a",3]}', "swipes",
         lambda m: m.swipes is not None and m.swipes[1].text == "3"),
        ('{"user_name":"a"}\n{"name":"x","mes":"a","is_user":"true"}', "is_user",
         lambda m: m.is_user),
        ('{"user_name":"a"}\n{"name":"x","mes":"a","is_user":0}', "is_user",
         lambda m: not m.is_user and m.fields["is_user"] is False),
        ('{"user_name":"a"}\n{"name":"x","mes":"a","swipe_id":"1","swipes":["b","a"]}',
         "swipe_id", lambda m: m.swipe_id == 1),
        ('{"user_name":"a"}\n{"name":7,"mes":"a"}', "name", lambda m: m.name == "7"),
    ],
)  # fmt: skip
def test_loose_message_values_are_read_with_a_warning(text: str, field: str, read: Any) -> None:
    """SillyTavern shows these messages; the values are read as it reads them, and said so."""
    found: list[FormatWarning] = []
    doc = read_chat(text, source="loose.jsonl", warnings=found)
    assert read(doc.messages[0])
    assert [(w.file, w.field) for w in found] == [("loose.jsonl", field)]
    assert "line 2" in found[0].message


def test_nulls_in_a_message_are_kept_as_absent_values() -> None:
    text = (
        '{"user_name":"a"}\n{"name":null,"mes":null,"is_user":null,"swipe_id":null,"swipes":null}'
    )
    found: list[FormatWarning] = []
    message = read_chat(text, source="n.jsonl", warnings=found).messages[0]
    assert (message.name, message.text, message.is_user, message.swipe_id) == ("", "", False, None)
    assert found == []  # nothing changed: each null stays in the file as it was


def test_broken_json_line_strict_and_lenient() -> None:
    text = '{"user_name":"a"}\n{"name":"x","mes":"ok"}\n{"name":"y","mes":\n[1,2]'
    with pytest.raises(FormatError, match="line 3"):
        read_chat(text, source="c.jsonl")
    doc = read_chat(text, source="c.jsonl", lenient=True)
    assert [m.text for m in doc.messages] == ["ok"]
    assert [s.line for s in doc.skipped] == [3, 4]


def test_bom_crlf_and_trailing_newline_are_read_and_written_back() -> None:
    text = '\ufeff{"user_name":"a","chat_metadata":{}}\r\n{"name":"x","mes":"hi"}\r\n'
    doc = read_chat(text.encode("utf-8"))
    assert doc.header is not None and doc.messages[0].text == "hi"
    assert write_chat(doc) == text
    # a chat made here is written as SillyTavern writes it
    made = document(doc.header, doc.messages)
    assert write_chat(made) == '{"user_name":"a","chat_metadata":{}}\n{"name":"x","mes":"hi"}'


@pytest.mark.parametrize("end", ["", "\n", "\r\n", "\n\n"])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_line_breaks_and_file_end_come_back(newline: str, end: str) -> None:
    lines = ['{"user_name":"a"}', '{"name":"x","mes":"one"}', '{"name":"y","mes":"two"}']
    text = newline.join(lines) + end
    assert write_chat(read_chat(text)) == text


def test_not_utf8() -> None:
    with pytest.raises(FormatError, match="UTF-8"):
        read_chat(b"\xff\xfe{", source="x.jsonl")


def test_inconsistent_swipes_are_reported() -> None:
    mid_swipe = MessageLine({"mes": "a", "swipes": ["a"], "swipe_id": 1})
    edited = MessageLine({"mes": "b", "swipes": ["a"], "swipe_id": 0})
    with_null = MessageLine({"mes": "a", "swipes": ["a", None], "swipe_id": 0})
    good = MessageLine({"mes": "a", "swipes": ["a"], "swipe_id": 0, "swipe_info": []})
    assert [m.swipes_consistent for m in (mid_swipe, edited, with_null, good)] == [
        False,
        False,
        False,
        True,
    ]


def test_make_message_writes_swipes_and_info() -> None:
    message = make_message(
        name="Seraphina",
        is_user=False,
        text="two",
        send_date="September 28, 2024 2:05pm",
        swipes=[Swipe("one", {"send_date": "x"}), Swipe("two", None)],
        swipe_id=1,
    )
    assert message.fields["swipes"] == ["one", "two"]
    assert message.fields["swipe_info"] == [{"send_date": "x"}]
    assert message.swipes_consistent


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (1e21, "1e+21"),
        (1e16, "10000000000000000"),
        (5.0, "5"),
        (0.000001, "0.000001"),
        (123.456, "123.456"),
        (-2.5e-300, "-2.5e-300"),
        (1.2345678901234567e20, "123456789012345670000"),
        (-0.0, "0"),
    ],
)
def test_numbers_are_written_like_javascript(value: float, expected: str) -> None:
    assert json_number(value) == expected
    assert dump_json({"x": [value]}) == '{"x":[' + expected + "]}"


def test_strings_are_not_escaped_beyond_json() -> None:
    assert dump_json({"a": "東京 / \u2028 \n"}) == '{"a":"東京 / \u2028 \\n"}'


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("September 28, 2024 2:03pm", datetime(2024, 9, 28, 14, 3)),
        ("December 1, 2024 12:00am", datetime(2024, 12, 1, 0, 0)),
        ("2024-9-28 @14h 03m 12s 45ms", datetime(2024, 9, 28, 14, 3, 12, 45000)),
        ("2024-09-28@14h03m12s", datetime(2024, 9, 28, 14, 3, 12)),
        (1695648000000, datetime(2023, 9, 25, 13, 20, tzinfo=UTC)),
        ("1695648000000", datetime(2023, 9, 25, 13, 20, tzinfo=UTC)),
        ("2025-12-01T09:00:00.042Z", datetime(2025, 12, 1, 9, 0, 0, 42000, tzinfo=UTC)),
        ("yesterday", None),
        (None, None),
    ],
)
def test_send_date_formats(value: str | int | None, expected: datetime | None) -> None:
    assert parse_send_date(value) == expected


def test_format_send_date_round_trips() -> None:
    moment = datetime(2024, 9, 28, 14, 3)
    assert format_send_date(moment) == "September 28, 2024 2:03pm"
    assert parse_send_date(format_send_date(moment)) == moment


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
messages = st.fixed_dictionaries(
    {"name": st.text(max_size=10), "is_user": st.booleans(), "mes": st.text()},
    optional={
        "is_system": st.booleans(),
        "send_date": st.text(max_size=20) | st.integers(min_value=0, max_value=2**45),
        "extra": st.dictionaries(st.text(max_size=8), json_values, max_size=4),
        "unknown_field": json_values,
    },
)


@settings(max_examples=60, deadline=None)
@given(
    metadata=st.dictionaries(st.text(max_size=8), json_values, max_size=5),
    lines=st.lists(messages, max_size=6),
)
def test_any_chat_round_trips(metadata: dict[str, object], lines: list[dict[str, object]]) -> None:
    header = {"user_name": "u", "character_name": "c", "chat_metadata": metadata}
    text = "\n".join(json.dumps(v, ensure_ascii=False) for v in [header, *lines])
    doc = read_chat(text)
    assert len(doc.messages) == len(lines)
    out = write_chat(doc)
    assert json_lines(out) == json_lines(text)
    assert write_chat(read_chat(out)) == out


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_js_numbers_read_back_to_the_same_float(value: float) -> None:
    assert float(json_number(value)) == value or value == 0


def test_chub_messages_are_flattened_on_request() -> None:
    text = (
        '{"user_name":"a","chat_metadata":{}}\n'
        '{"name":"x","is_user":false,"mes":{"message":"hi"},"swipe_id":0,'
        '"swipes":[{"message":"hi"},{"message":"hello"}]}'
    )
    with pytest.raises(FormatError):
        read_chat(text)
    (message,) = read_chat(text, flatten_chub=True).messages
    assert message.text == "hi" and message.fields["swipes"] == ["hi", "hello"]
    assert message.swipes_consistent


def test_plain_text_export(st_fixtures: Path) -> None:
    from taverna.formats.st_chat import chat_as_text

    path = next(st_fixtures.rglob("Seraphina - 2024-09-28@14h03m12s.jsonl"))
    text = chat_as_text(read_chat(path.read_text(encoding="utf-8")))
    blocks = text.split("\n\n")
    assert blocks[0].startswith("Seraphina: *You wake")
    assert blocks[1].startswith("Traveler: Where am I?")
    assert "moonpetal garden later" not in text  # the hidden comment stays out
    assert text.endswith('moonpetal garden."\n\n')
    assert len(blocks) == 6 + 1


def test_forks_are_read_nested_and_checked_with_the_field_named() -> None:
    fork_line = {"name": "A", "is_user": False, "mes": "old reply", "extra": {}}
    nested = {"name": "U", "is_user": True, "mes": "older", FORKS: [[fork_line]]}
    line = {"name": "U", "is_user": True, "mes": "new", FORKS: [[nested, fork_line]]}
    document = read_chat(json.dumps(line))
    (message,) = document.messages
    ((first, second),) = message.forks
    assert (first.text, second.text) == ("older", "old reply")
    assert [[m.text for m in fork] for fork in first.forks] == [["old reply"]]
    for bad in ({FORKS: "x"}, {FORKS: [["x"]]}, {FORKS: [[{"mes": 3}]]}):
        deep = {"name": "U", "mes": "new", FORKS: [[{"name": "A", "mes": "m", **bad}]]}
        with pytest.raises(FormatError) as caught:
            read_chat(json.dumps(deep), source="c.jsonl")
        assert caught.value.file == "c.jsonl" and caught.value.field in (FORKS, "mes")


def test_a_line_nested_beyond_the_parser_is_a_format_error() -> None:
    with pytest.raises(FormatError) as caught:
        read_chat('{"mes": "x", "extra": ' + "[" * 100_000 + "]" * 100_000 + "}", source="d.jsonl")
    assert "line 1" in caught.value.message
