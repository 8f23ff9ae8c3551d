"""Macros as SillyTavern 1.12.6 evaluates them (algo-chat-ops.md §7-8)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taverna.engine.macros import (
    MacroContext,
    SeededRandom,
    Variables,
    chat_seed,
    evaluate,
    string_hash,
)
from taverna.engine.macros.js import js_number, js_number_text

NOW = datetime(2024, 9, 28, 14, 3, 7, tzinfo=UTC)
CTX = MacroContext(user="Ann", char="Seraphina", now=NOW, seed=7)


def text(source: str, context: MacroContext = CTX) -> str:
    return evaluate(source, context).text


def test_string_hash_and_seedrandom_vectors() -> None:
    """§8: getStringHash and seedrandom(ARC4), checked against SillyTavern's JS."""
    assert string_hash("東京") == 3192132572139459
    rng = SeededRandom(1234567890123)
    assert [rng.random() for _ in range(3)] == [
        0.14136177636743713,
        0.40546436547494413,
        0.4210362074590101,
    ]


def test_pick_matches_sillytavern() -> None:
    """§8 worked example: chat `Seraphina - 2024-9-28@10h00m00s` picks `red`."""
    context = MacroContext(chat_id_hash=chat_seed("Seraphina - 2024-9-28@10h00m00s"))
    assert chat_seed("Seraphina - 2024-9-28@10h00m00s") == 5140172430254442
    assert text("I like {{pick::red::green::blue}}.", context) == "I like red."


def test_pick_is_stable_per_chat_and_position() -> None:
    """§2.1: same chat seed + same text -> same pick (a branch draws the same)."""
    a = MacroContext(chat_id_hash=chat_seed("root-1"))
    b = MacroContext(chat_id_hash=chat_seed("root-1"), seed=99, now=NOW)
    source = " ".join(["{{pick::" + "::".join(map(str, range(50))) + "}}"] * 6)
    assert text(source, a) == text(source, b)
    assert len(set(text(source, a).split())) > 1  # each position draws on its own
    others = {text(source, MacroContext(chat_id_hash=chat_seed(f"root-{i}"))) for i in range(5)}
    assert len(others) > 1


def test_random_and_roll_come_from_the_context_seed() -> None:
    """§8: {{random}} and {{roll}} are random; here the randomness is the context's."""
    source = "{{random::a::b::c::d::e::f}} {{roll:3d6}} {{roll 20}} {{random:x, y\\, z}}"
    assert text(source) == text(source)
    outputs = {text(source, MacroContext(seed=s)) for s in range(10)}
    assert len(outputs) > 1
    for out in outputs:
        item, dice, d20, comma = out.split(" ", 3)
        assert item in "abcdef" and 3 <= int(dice) <= 18 and 1 <= int(d20) <= 20
        assert comma in ("x", "y, z")
    assert text("{{roll:2d0}}|{{roll:abc}}") == "|"  # invalid formula -> ""
    assert text("{{random::a:: b }}", MacroContext(seed=1)) in ("a", " b ")


def test_order_fields_before_names_and_variables_before_fields() -> None:
    """§8: {{char}} inside a description is resolved, {{getvar}} inside it is not."""
    context = MacroContext(
        char="Sera",
        description="{{char}} heals. {{getvar::x}}",
        variables=Variables(local={"x": "5"}),
    )
    assert text("{{description}}", context) == "Sera heals. {{getvar::x}}"


def test_legacy_tags_and_group() -> None:
    """§8 step 1: <USER>, <BOT>/<CHAR>, <GROUP>/<CHARIFNOTGROUP> (solo: the character)."""
    assert text("<user> and <BOT>/<char>: <GROUP>") == "Ann and Seraphina/Seraphina: Seraphina"
    group = MacroContext(char="A", group="A, B")
    assert text("{{group}} {{charIfNotGroup}} <GROUP>", group) == "A, B A, B A, B"


def test_variables_line_by_line_in_fixed_order() -> None:
    """§7: per line all getvar, then setvar, addvar, incvar, decvar, then the globals."""
    result = evaluate("{{setvar::x::1}}{{getvar::x}}\n{{getvar::x}}", CTX)
    assert result.text == "\n1"
    assert result.variables.local == {"x": "1"}
    assert CTX.variables.local == {}  # no mutation of the input


def test_addvar_semantics() -> None:
    """§7: JSON list -> push; both numeric -> sum; otherwise concatenation."""
    context = MacroContext(
        variables=Variables(local={"n": "5", "s": "ab", "l": '["tea"]', "f": 0.5})
    )
    result = evaluate(
        "{{addvar::n::2}}{{addvar::s::c}}{{addvar::l::cake}}{{addvar::new::x}}"
        "{{addvar::f::0.25}}{{addvar::m::3}}",
        context,
    )
    assert result.variables.local == {
        "n": 7,
        "s": "abc",
        "l": '["tea","cake"]',
        "f": 0.75,
        "new": "x",
        "m": 3,
    }
    counted = evaluate("{{incvar::n}} {{decvar::n}} {{decvar::fresh}}", context)
    assert counted.text == "6 5 -1"  # incvar runs before decvar on a line


def test_global_variables_and_numbers_print_like_javascript() -> None:
    context = MacroContext(variables=Variables(global_={"g": "0x10", "h": " 7 "}))
    result = evaluate("{{getglobalvar::g}} {{getglobalvar::h}} {{setglobalvar::k::v}}", context)
    assert result.text == "16 7 "
    assert result.variables.global_["k"] == "v" and result.variables.local == {}


def test_setvar_needs_a_value() -> None:
    """§7: `{{setvar::x::}}` does not match the macro and stays as text."""
    assert text("{{setvar::x::}}") == "{{setvar::x::}}"


def test_trim_newline_noop_comments_reverse() -> None:
    assert text("a\n\n{{trim}}\r\nb") == "ab"
    assert text("a{{newline}}b{{noop}}c") == "a\nbc"
    assert text("x{{// a\nmulti-line comment}}y") == "xy"
    assert text("{{reverse:abc東京}}") == "京東cba"


def test_original_is_replaced_once() -> None:
    """§8: only the first {{original}} gets the text; later ones become empty."""
    context = MacroContext(original="BASE")
    assert text("{{original}} + {{original}}", context) == "BASE + "
    assert text("{{original}}") == "{{original}}"  # not inside an override: left alone


def test_time_macros_use_the_context_clock() -> None:
    """§8: moment.js LT, LL, dddd, HH:mm, YYYY-MM-DD, datetimeformat, time_UTC."""
    assert text("{{time}}|{{date}}|{{weekday}}|{{isotime}}|{{isodate}}") == (
        "2:03 PM|September 28, 2024|Saturday|14:03|2024-09-28"
    )
    assert text("{{datetimeformat dddd Do MMMM YYYY [at] h:mm A}}") == (
        "Saturday 28th September 2024 at 2:03 PM"
    )
    assert text("{{time_UTC+2}} {{time_UTC-10}}") == "4:03 PM 4:03 AM"
    local = MacroContext(now=NOW.astimezone(timezone(timedelta(hours=9))))
    assert text("{{isotime}}", local) == "23:03"


def test_idle_duration_and_time_diff() -> None:
    """§8: humanized like moment.js (`a few seconds`, `2 hours`, `in a day`)."""
    assert text("{{idle_duration}}") == "just now"
    idle = MacroContext(now=NOW, idle_since=NOW - timedelta(hours=2, minutes=10))
    assert text("{{idle_duration}}", idle) == "2 hours"
    assert text("{{timeDiff::2024-01-03::2024-01-01}}") == "in 2 days"
    assert text("{{timeDiff::2024-01-01 10:00::2024-01-01 10:00:30}}") == "a few seconds ago"
    assert text("{{timeDiff::soon::later}}") == "Invalid date"


def test_chat_state_and_fields() -> None:
    context = MacroContext(
        user="Ann",
        char="Sera",
        persona="a traveller",
        scenario="{{user}} rests",
        last_message="hi",
        last_message_id=4,
        last_user_message="hello",
        last_char_message="welcome",
        input="typed",
        max_prompt=3795,
        model="gpt-4-turbo",
        extra={"summary": "so far"},
    )
    assert (
        text(
            "{{scenario}}|{{persona}}|{{lastMessage}}|{{lastMessageId}}|{{lastUserMessage}}|"
            "{{lastCharMessage}}|{{input}}|{{maxPrompt}}|{{model}}|{{summary}}|{{firstIncludedMessageId}}",
            context,
        )
        == "Ann rests|a traveller|hi|4|hello|welcome|typed|3795|gpt-4-turbo|so far|"
    )


def test_names_are_case_insensitive() -> None:
    assert text("{{USER}} {{Char}}") == "Ann Seraphina"


def test_banned_words_are_removed_and_reported() -> None:
    result = evaluate('a{{banned "never say this"}}b', CTX)
    assert result.text == "ab" and result.banned == ("never say this",)


def test_instruct_macros_with_aliases() -> None:
    context = MacroContext(instruct={"instructUserPrefix": "<|user|>", "chatStart": "<START>"})
    assert text(
        "{{instructInput}}{{instructUserPrefix}}{{chatStart}}{{instructStop}}", context
    ) == ("<|user|><|user|><START>")


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        (5.0, "5"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (-0.5, "-0.5"),
    ],
)
def test_javascript_number_printing(value: float, printed: str) -> None:
    assert js_number_text(value) == printed


def test_javascript_number_parsing() -> None:
    # JavaScript's digits are ASCII: Arabic-Indic digits are no number (NaN)
    assert js_number("١٢") is None and js_number("-0x10") is None
    assert [js_number(v) for v in ("", " 7 ", "0x10", "1e3", ".5", "abc", "1_0")] == [
        0.0,
        7.0,
        16.0,
        1000.0,
        0.5,
        None,
        None,
    ]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "a",
                "b",
                "_",
                "\n",
                ":",
                "{{",
                "}}",
                "::",
                "pick",
                "random",
                "roll",
                "user",
                "setvar",
                "getvar",
                "x",
                "1",
                "2d6",
                "trim",
                "//",
            ]
        ),
        max_size=40,
    ).map("".join),
    st.integers(0, 5),
)
def test_same_context_same_text(source: str, seed: int) -> None:
    """Property: evaluation is a pure function of the text and the context."""
    context = MacroContext(seed=seed, chat_id_hash=seed * 31, now=NOW)
    first = evaluate(source, context)
    second = evaluate(source, context)
    assert first == second
    assert context.variables == Variables()
