"""The macro engine does costly work only for the macros a text holds (same results)."""

from __future__ import annotations

import importlib
from datetime import UTC, datetime

import pytest

from taverna.engine.macros import MacroContext, evaluate

# The module (the package re-exports its function under the same name).
evaluate_module = importlib.import_module("taverna.engine.macros.evaluate")

NOW = datetime(2024, 5, 1, 15, 30, tzinfo=UTC)
CONTEXT = MacroContext(user="Alex", char="Aria", description="{{user}}'s friend", now=NOW)


def _refuse(*_args: object, **_kw: object) -> object:
    raise AssertionError("called for a text that does not need it")


def test_no_clock_formatting_without_a_time_macro(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(evaluate_module, "format_moment", _refuse)
    text = "{{char}} greets {{user}}. {{description}} {{getvar::x}}{{// note}}"
    assert evaluate(text, CONTEXT).text == "Aria greets Alex. Alex's friend "


def test_no_text_hash_without_a_draw(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(evaluate_module, "string_hash", _refuse)
    assert evaluate("{{char}} at {{time}} on {{weekday}}", CONTEXT).text == (
        "Aria at 3:30 PM on Wednesday"
    )


def test_time_macros_still_print_where_they_occur() -> None:
    text = "{{time}}|{{date}}|{{weekday}}|{{isotime}}|{{isodate}}|{{time}}"
    assert evaluate(text, CONTEXT).text == (
        "3:30 PM|May 1, 2024|Wednesday|15:30|2024-05-01|3:30 PM"
    )


def test_draws_are_unchanged_by_laziness() -> None:
    """The hash is taken of the text as given, not of what earlier passes made of it."""
    text = "{{char}}: {{pick::a::b::c::d::e::f::g}} {{random::1::2::3::4::5}} {{roll::1d20}}"
    first = evaluate(text, CONTEXT).text
    assert evaluate(text, CONTEXT).text == first
    seeded = MacroContext(user="Alex", char="Aria", now=NOW, chat_id_hash=5140172430254442)
    assert evaluate("I like {{pick::red::green::blue}}.", seeded).text == "I like red."
