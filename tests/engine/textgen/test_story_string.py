"""The story string template (algo-prompt-assembly.md §6.2, formats-presets.md §3.1).

The expected outputs of the pinned cases were produced by the Handlebars library
itself (4.7.8, `noEscape`, with SillyTavern's `trim` and `helperMissing` helpers,
the latter printing `<M:name>`), so they pin Handlebars' behaviour, standalone-line
rule included.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taverna.engine.textgen.story_string import parse_story_string, render_story_template
from taverna.errors import FormatError

VALUES = {
    "system": "SYS",
    "description": "DESC",
    "personality": "",
    "scenario": "SCN",
    "persona": "",
    "char": "Aria",
    "user": "Alex",
    "wiBefore": "",
    "wiAfter": "WA",
    "mesExamples": "EX\n",
    "list": ["a", "b"],
}


def missing(tag: str) -> str:
    return "<M:" + tag[2:-2] + ">"


HANDLEBARS_CASES = [
    (
        "{{#if system}}\n{{system}}\n{{/if}}\n{{#if personality}}\n{{char}}'s personality: "
        "{{personality}}\n{{/if}}\n{{#if scenario}}\nScenario: {{scenario}}\n{{/if}}\n",
        "SYS\nScenario: SCN\n",
    ),
    (
        "<|im_start|>system\n{{#if system}}{{system}}\n{{/if}}{{#if wiBefore}}{{wiBefore}}\n{{/if}}"
        "{{#if description}}{{description}}\n{{/if}}{{#if personality}}{{char}}'s personality: "
        "{{personality}}\n{{/if}}{{#if wiAfter}}{{wiAfter}}\n{{/if}}{{trim}}<|im_end|>",
        "<|im_start|>system\nSYS\nDESC\nWA\n{{trim}}<|im_end|>",
    ),
    (
        "  {{#unless personality}}\n  no personality\n  {{else}}\n  {{personality}}\n  {{/unless}}\n"
        "{{!-- a comment --}}\nEnd {{original}} {{random::a::b}}",
        "  no personality\nEnd <M:original> <M:random::a::b>",
    ),
    (
        "{{~#if description~}}\n  [{{description}}]\n{{~/if~}}\n\n{{#each list}}{{@index}}={{this}};{{/each}}",
        "[DESC]0=a;1=b;",
    ),
    (
        "{{#if persona}}P{{else if scenario}}S:{{scenario}}{{else}}N{{/if}}\n{{{description}}} \\{{literal}}",
        "S:SCN\nDESC {{literal}}",
    ),
]


@pytest.mark.parametrize(("template", "expected"), HANDLEBARS_CASES)
def test_renders_as_handlebars_does(template: str, expected: str) -> None:
    assert render_story_template(template, VALUES, missing) == expected


def test_unknown_names_go_to_the_macro_engine_and_trim_stays() -> None:
    # §6.2: unknown helpers are resolved through the macro engine; {{trim}} is kept.
    out = render_story_template("{{original}}|{{trim}}|{{description}}", VALUES, missing)
    assert out == "<M:original>|{{trim}}|DESC"
    # Without a hook the tag is left as written, for a later macro pass.
    assert render_story_template("{{original}}", VALUES) == "{{original}}"


def test_no_html_escaping() -> None:
    values = {"description": "<b>&'\"</b>"}
    assert render_story_template("{{description}}", values) == "<b>&'\"</b>"


@pytest.mark.parametrize(
    "template",
    [
        "{{#if a}}x",
        "x{{/if}}",
        "{{#if a}}x{{/unless}}",
        "{{description",
        "{{!-- open",
        "{{>partial}}",
    ],
)
def test_malformed_templates_are_format_errors_naming_the_field(template: str) -> None:
    with pytest.raises(FormatError) as error:
        parse_story_string(template)
    assert error.value.field == "story_string"


def test_if_needs_exactly_one_value() -> None:
    with pytest.raises(FormatError):
        render_story_template("{{#if a b}}x{{/if}}", {"a": "1", "b": "2"})


_plain = st.text(alphabet=st.characters(blacklist_characters="{}\\"), max_size=40)
_value = st.text(max_size=30)


@given(_plain)
def test_text_without_tags_renders_unchanged(text: str) -> None:
    assert render_story_template(text, {}) == text


@given(_value)
def test_values_are_inserted_verbatim(value: str) -> None:
    # A value is never re-read as a template (nothing in it runs).
    assert render_story_template("[{{x}}]", {"x": value}) == f"[{value}]"


@given(_value, st.text(alphabet="ab ", max_size=10), st.text(alphabet="cd ", max_size=10))
def test_if_else_picks_the_branch_by_emptiness(value: str, yes: str, no: str) -> None:
    out = render_story_template(f"<{{{{#if x}}}}{yes}{{{{else}}}}{no}{{{{/if}}}}>", {"x": value})
    assert out == f"<{yes if value else no}>"


@given(st.booleans(), st.sampled_from(["if", "unless"]))
def test_standalone_block_lines_disappear(truthy: bool, helper: str) -> None:
    template = f"a\n{{{{#{helper} x}}}}\nB\n{{{{/{helper}}}}}\nc"
    shown = truthy if helper == "if" else not truthy
    out = render_story_template(template, {"x": "1" if truthy else ""})
    assert out == ("a\nB\nc" if shown else "a\nc")


_pieces = st.sampled_from(
    [
        "{{#if a}}",
        "{{else}}",
        "{{/if}}",
        "{{a}}",
        "{{{a}}}",
        "{{!c}}",
        "{{!-- c --}}",
        "{{~a~}}",
        "\n",
        " ",
        "x",
        "{{",
        "}}",
        "{{#each l}}",
        "{{/each}}",
        "{{this}}",
        "{{random::a::b}}",
        "{{#a}}",
        "{{/a}}",
        "\\{{",
    ]
)


@given(st.lists(_pieces, max_size=20), st.text(max_size=5))
def test_any_template_renders_or_fails_with_a_format_error(pieces: list[str], value: str) -> None:
    template = "".join(pieces)
    try:
        out = render_story_template(template, {"a": value, "l": [value]}, missing)
    except FormatError as error:
        assert error.field == "story_string"
    else:
        assert isinstance(out, str)


@given(st.lists(st.sampled_from(["{{#if a}}", "{{#unless a}}"]), max_size=6), _value)
def test_nested_blocks_balance(openers: list[str], value: str) -> None:
    closers = ["{{/if}}" if o == "{{#if a}}" else "{{/unless}}" for o in reversed(openers)]
    template = "".join(openers) + "X" + "".join(closers)
    shown = all((o == "{{#if a}}") == bool(value) for o in openers)
    assert render_story_template(template, {"a": value}) == ("X" if shown else "")


def test_numbers_print_as_javascript_prints_them() -> None:
    """Handlebars prints a value with JavaScript's `String()`: `1e-7`, `1e+21`, `5`."""
    values = {"small": 1e-7, "big": 1e21, "whole": 5.0, "list": [1.0, 2.5, None]}
    out = render_story_template("{{small}}|{{big}}|{{whole}}|{{list}}", values)
    assert out == "1e-7|1e+21|5|1,2.5,"
    assert render_story_template("{{#with 0.0000001}}{{this}}{{/with}}", {}) == "1e-7"
