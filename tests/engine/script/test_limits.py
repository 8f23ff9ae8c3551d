"""A script cannot hang or crash: step and time limits, and fuzzed input."""

from __future__ import annotations

import contextlib
import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taverna.engine.script import CATALOGUE, Limits, ScriptContext, ScriptError, run_script


def test_an_endless_loop_stops_at_the_step_limit_with_a_clear_error() -> None:
    context = ScriptContext(limits=Limits(max_steps=500))
    with pytest.raises(ScriptError) as raised:
        run_script(
            "/setvar key=i 0 |\n/while left=1 right=1 rule=eq guard=off {: /incvar i :}", context
        )
    error = raised.value
    assert "more than 500 commands" in str(error)
    assert error.command == "incvar"
    assert (error.line, error.column) == (2, 44)


def test_a_slow_script_stops_at_the_time_limit() -> None:
    ticks = itertools.count()
    context = ScriptContext(limits=Limits(max_seconds=5.0), clock=lambda: float(next(ticks)))
    with pytest.raises(ScriptError) as raised:
        run_script("/times guard=off 1000 {: /pass :}", context)
    assert "longer than 5 seconds" in str(raised.value)


def test_recursion_stops_at_the_depth_limit() -> None:
    with pytest.raises(ScriptError) as raised:
        run_script("/let f {: /:f :} | /:f")
    assert "deep" in str(raised.value)


def test_deeply_nested_closures_are_refused_not_crashed() -> None:
    with pytest.raises(ScriptError):
        run_script("/run " + "{: /run " * 500 + ":}" * 500)


def test_the_same_seed_rolls_the_same() -> None:
    script = "/roll quiet=true 10d100 | /rand from=0 to=1000"
    first = run_script(script, ScriptContext(seed=7)).pipe
    assert run_script(script, ScriptContext(seed=7)).pipe == first


_WORDS = st.sampled_from(
    [f"/{name}" for name in sorted(CATALOGUE)]
    + [
        "|",
        "||",
        "{:",
        ":}",
        ":}()",
        '"',
        "\\",
        "\\|",
        "[",
        "]",
        "{{pipe}}",
        "{{var::x}}",
        "{{getvar::x}}",
        "{{timesIndex}}",
        "x=",
        "key=x",
        "left=x",
        "right=1",
        "rule=eq",
        "rule=lt",
        "index=0",
        "guard=off",
        "1",
        "-2.5",
        "x",
        "hello",
        " ",
        "\n",
        "/*",
        "*|",
        "//",
        "/:",
        "/:x",
        "else=",
        "as=number",
        "1d6",
        "[1,2]",
        '{"a":1}',
        "/break",
        "()",
    ]
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_WORDS, max_size=30).map(" ".join))
def test_fuzzed_scripts_raise_only_script_errors(script: str) -> None:
    context = ScriptContext(limits=Limits(max_steps=2_000))
    with contextlib.suppress(ScriptError):
        run_script(script, context)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_raises_only_script_errors(script: str) -> None:
    with contextlib.suppress(ScriptError):
        run_script("/" + script, ScriptContext(limits=Limits(max_steps=2_000)))
