"""A chat file's bad lines are told by a code and params a page says in its language (the
column where the JSON breaks, the kind of value found), in English and Chinese."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taverna.errors import FormatError
from taverna.formats.st_chat import read_chat

CATALOGS = Path(__file__).resolve().parents[2] / "taverna" / "web" / "i18n"
HEADER = b'{"user_name":"U","character_name":"C","create_date":"x"}\n'


def catalog(language: str) -> dict[str, str]:
    return json.loads((CATALOGS / f"{language}.json").read_text(encoding="utf-8"))


def test_a_line_that_is_not_json_names_its_column() -> None:
    data = HEADER + b'{"name":"C","is_user":false,"mes":"hi"}\n{"name": oops}'
    with pytest.raises(FormatError) as raised:
        read_chat(data, source="x.jsonl")
    assert raised.value.code == "line_not_valid_json_at"
    assert raised.value.params["number"] == "3"
    assert raised.value.params["column"] == "10"
    # the parser's own words stay in the English message, its line count (1, for a line
    # read alone) does not: the file's line and the column are named once
    assert "line 3: not valid JSON at column 10 (Expecting value)" in str(raised.value)
    assert "line 1" not in str(raised.value)
    lenient = read_chat(data, source="x.jsonl", lenient=True)
    (line,) = lenient.skipped
    assert (line.line, line.code, line.params["column"]) == (3, "json_unreadable_at", "10")


def test_a_line_of_another_kind_names_the_kind() -> None:
    lenient = read_chat(HEADER + b"[1, 2]", source="x.jsonl", lenient=True)
    (line,) = lenient.skipped
    assert (line.code, line.params["value"]) == ("line_expected_json_object_found", "a list")


@pytest.mark.parametrize("language", ["en", "zh-CN"])
def test_the_codes_and_the_kinds_of_value_have_words(language: str) -> None:
    words = catalog(language)
    for code in ("line_not_valid_json_at", "json_unreadable_at"):
        assert "{column}" in words[f"server.{code}"]
        assert "{exc}" not in words[f"server.{code}"]
    for kind in ("null", "true", "false", "a boolean", "a number", "a string", "a list"):
        said = words[f"value.{kind.replace(' ', '_')}"]
        assert said == kind if language == "en" else not any(c.isascii() for c in said)
    assert (
        words["value.an_object"] and words["value.an_empty_list"] and words["value.an_empty_object"]
    )


def test_a_loose_value_of_a_line_keeps_its_code_and_names_the_line() -> None:
    data = HEADER + b'{"name":"U","is_user":"yes","mes":"hi"}'
    (warning,) = read_chat(data, source="x.jsonl").warnings
    assert str(warning.message).startswith("line 2: ")
    assert warning.code and warning.params["line"] == 2
    for language in ("en", "zh-CN"):
        assert f"server.{warning.code}" in catalog(language)
    assert catalog("zh-CN")["import.at_line"] == "第 {line} 行："
