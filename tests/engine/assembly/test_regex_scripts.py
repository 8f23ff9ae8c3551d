"""Regex scripts at prompt time (algo-chat-ops.md §6, formats-extensions.md §1)."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from taverna.engine.assemble import assemble
from taverna.engine.assembly.ledger import render_ledger
from taverna.engine.assembly.regex_scripts import (
    RegexUse,
    applies,
    escaped_for_regex,
    regex_from_string,
    regexed,
    run_script,
)
from taverna.engine.lorebook.regex_budget import RegexBudget
from taverna.formats.world_info import world_info_from_json
from taverna.model.regex_script import RegexPlacement, RegexScript

from .helpers import SERAPHINA, build, chat, context, pairs, word_count


def script(**fields: Any) -> RegexScript:
    base = {"scriptName": "s", "findRegex": "", "replaceString": "", "placement": [1, 2]}
    return RegexScript.from_json({**base, **fields})


def same(text: str) -> str:
    return text


def test_regex_from_string_section_6_3() -> None:
    """§6.3: `/body/flags`; a bare pattern has no flags; invalid flags make it all pattern."""
    parsed = regex_from_string("/a.c/gi")
    assert parsed is not None and parsed[1] is True and parsed[0].pattern.search("xABCx")
    bare = regex_from_string("a.c")
    assert bare is not None and bare[1] is False
    odd = regex_from_string("/ab/q")
    assert odd is not None and odd[0].pattern.search("/ab/q") and not odd[0].pattern.search("ab")


def test_first_match_only_without_g_section_6_3() -> None:
    assert run_script(script(findRegex="o", replaceString="0"), "foo boo", same) == "f0o boo"
    assert run_script(script(findRegex="/o/g", replaceString="0"), "foo boo", same) == "f00 b00"


def test_groups_match_trim_and_macros_section_6_3() -> None:
    """§6.3: {{match}} is $0, groups lose their trim strings, macros run on the result."""
    rule = script(
        findRegex=r"/\[(\w+)\]/g",
        replaceString="<{{match}}|$1|$5|{{char}}>",
        trimStrings=["x"],
    )
    macros = lambda text: text.replace("{{char}}", "Sera")  # noqa: E731
    assert run_script(rule, "a [box] b", macros) == "a <[bo]|bo||Sera> b"


def test_which_scripts_run_at_prompt_time_section_6_1() -> None:
    """§6.1-6.2: display-only scripts never; prompt-only and storage ones do; depth limits."""
    assert not applies(script(markdownOnly=True), RegexPlacement.AI_OUTPUT, 0)
    assert applies(script(markdownOnly=True, promptOnly=True), RegexPlacement.AI_OUTPUT, 0)
    assert applies(script(promptOnly=True), RegexPlacement.USER_INPUT, 3)
    assert not applies(script(placement=[1]), RegexPlacement.AI_OUTPUT, 0)
    assert not applies(script(minDepth=1), RegexPlacement.AI_OUTPUT, 0)
    assert not applies(script(maxDepth=2), RegexPlacement.AI_OUTPUT, 3)
    assert applies(script(minDepth=1, maxDepth=2), RegexPlacement.AI_OUTPUT, None)


def test_history_is_regexed_by_author_and_depth_section_1() -> None:
    """algo-prompt-assembly.md §1 step 10: AI output scripts on replies, by depth."""
    rule = script(
        findRegex="/secret/g",
        replaceString="[redacted]",
        placement=[2],
        promptOnly=True,
        minDepth=1,
    )
    messages = chat(("character", "a secret"), ("user", "my secret"), ("character", "new secret"))
    got = [
        c
        for r, c, _ in pairs(build(context(messages=messages, regex_scripts=(rule,))))
        if r != "system"
    ]
    assert got == ["a [redacted]", "my secret", "new secret"]


def test_lorebook_contents_are_regexed() -> None:
    """world-info.js: entry contents go through WORLD_INFO scripts before placement."""
    book = world_info_from_json(
        {
            "entries": {
                "0": {
                    "uid": 0,
                    "key": [],
                    "content": "The gate is red.",
                    "constant": True,
                    "position": 0,
                }
            }
        },
        name="Book",
    )
    rule = script(findRegex="red", replaceString="blue", placement=[5])
    character = replace(SERAPHINA, linked_lorebook="Book")
    ctx = context(character=character, lorebooks={"Book": book}, regex_scripts=(rule,))
    assert ("system", "The gate is blue.", None) in pairs(build(ctx))


def test_a_runaway_pattern_leaves_the_text() -> None:
    """Untrusted patterns never hang the turn: the time limit keeps the text as it was."""
    rule = script(findRegex="/(a+)+$/", replaceString="X")
    started = time.perf_counter()
    text = "a" * 40 + "!"
    assert run_script(rule, text, same) == text
    assert time.perf_counter() - started < 5


def test_a_turns_regexes_share_one_time_budget() -> None:
    """A runaway script over many messages spends the turn's time for user regexes: the
    rest of its runs, and the lorebook's regex key after them, are skipped and listed."""
    runaway = script(scriptName="runaway", findRegex="/(a+)+$/", replaceString="X")
    tidy = script(scriptName="tidy", findRegex="/gate/g", replaceString="door")
    book = world_info_from_json(
        {"entries": {"0": {"uid": 0, "key": ["/gate/"], "content": "Gate lore.", "position": 0}}},
        name="Book",
    )
    character = replace(SERAPHINA, linked_lorebook="Book")
    long_line = "a" * 5000 + "!"
    messages = chat(*[("user" if i % 2 else "character", long_line) for i in range(30)])
    messages = (*messages, *chat(("user", "the gate")))
    ctx = context(
        character=character,
        lorebooks={"Book": book},
        messages=messages,
        regex_scripts=(runaway, tidy),
    )
    budget = RegexBudget(0.2)
    prompt = assemble(ctx, count_text=word_count, regexes=budget)
    notes = prompt.ledger.skipped_regexes
    by_source = {(n.kind, n.source) for n in notes}
    assert ("regex script", "runaway") in by_source
    assert ("regex script", "tidy") in by_source  # skipped too, once the time was spent
    assert ("lorebook key", "Book/0") in by_source
    assert all(n.reason for n in notes)
    runs = sum(n.count for n in notes if n.source == "runaway")
    assert runs == 31  # every message the runaway script applies to, none run twice
    texts = [m.content for m in prompt.messages]
    assert "Gate lore." not in "\n".join(texts)  # the key was not run: no match
    assert texts[-1] == "the gate"  # the tidy script was not applied
    assert long_line in texts  # the runaway script left its texts as they were
    assert "user regexes stopped by a time limit:" in render_ledger(prompt)


def test_a_turn_within_its_time_lists_nothing() -> None:
    tidy = script(scriptName="tidy", findRegex="/gate/g", replaceString="door")
    ctx = context(messages=chat(("user", "the gate")), regex_scripts=(tidy,))
    prompt = build(ctx)
    assert prompt.ledger.skipped_regexes == ()
    assert prompt.messages[-1].content == "the door"
    assert "user regexes" not in render_ledger(prompt)


def test_each_moment_runs_its_own_scripts_section_6_1() -> None:
    """§6.1: storing runs the scripts with neither flag, showing the `markdownOnly` ones,
    the prompt the `promptOnly` ones and the storage ones again (1.12.6)."""
    storage, display, prompt = script(), script(markdownOnly=True), script(promptOnly=True)
    both = script(markdownOnly=True, promptOnly=True)
    placement = RegexPlacement.AI_OUTPUT
    ran = {
        use: [applies(s, placement, None, use) for s in (storage, display, prompt, both)]
        for use in RegexUse
    }
    assert ran[RegexUse.STORE] == [True, False, False, False]
    assert ran[RegexUse.DISPLAY] == [False, True, False, True]
    assert ran[RegexUse.PROMPT] == [True, False, True, True]


def test_an_edit_runs_only_run_on_edit_scripts() -> None:
    """An edit of a stored message is rewritten only by storage scripts marked `runOnEdit`."""
    plain, on_edit = script(), script(runOnEdit=True)
    placement = RegexPlacement.USER_INPUT
    assert applies(plain, placement, None, RegexUse.STORE)
    assert not applies(plain, placement, None, RegexUse.STORE, edit=True)
    assert applies(on_edit, placement, None, RegexUse.STORE, edit=True)
    rules = (script(findRegex="a", replaceString="b"),)
    assert regexed("a", placement, rules, same, RegexUse.STORE, edit=True) == "a"
    assert regexed("a", placement, rules, same, RegexUse.STORE) == "b"


def test_depth_limits_section_6_2() -> None:
    """§6.2: skipped below `minDepth` and above `maxDepth`; -1 or unset is no limit; a text
    with no depth (storing, a lorebook entry not at a depth) ignores the limits."""
    window = script(minDepth=1, maxDepth=2)
    placement = RegexPlacement.USER_INPUT
    assert [applies(window, placement, d) for d in range(4)] == [False, True, True, False]
    assert applies(window, placement, None)
    assert applies(script(minDepth=-1, maxDepth=-1), placement, 0)
    assert applies(window, placement, None, RegexUse.STORE)
    shown = script(markdownOnly=True, maxDepth=0)
    assert applies(shown, placement, 0, RegexUse.DISPLAY)
    assert not applies(shown, placement, 1, RegexUse.DISPLAY)


def test_reasoning_and_slash_command_placements() -> None:
    rule = script(placement=[3, 6])
    assert applies(rule, RegexPlacement.REASONING, None, RegexUse.STORE)
    assert applies(rule, RegexPlacement.SLASH_COMMAND, None, RegexUse.STORE)
    assert not applies(rule, RegexPlacement.AI_OUTPUT, None, RegexUse.STORE)


def test_macros_in_the_find_pattern_raw_and_escaped() -> None:
    """`substituteRegex`: 0 the pattern as written, 1 macros expanded, 2 their values escaped."""
    names = lambda text: text.replace("{{char}}", "A.B")  # noqa: E731
    text = "A.B and AxB"
    none = script(findRegex="/{{char}}/g", replaceString="N", substituteRegex=0)
    raw = script(findRegex="/{{char}}/g", replaceString="N", substituteRegex=1)
    escaped = script(findRegex="/{{char}}/g", replaceString="N", substituteRegex=2)
    legacy = script(findRegex="/{{char}}/g", replaceString="N", substituteRegex=True)
    assert run_script(none, text, names) == text
    assert run_script(raw, text, names) == "N and N"
    assert run_script(legacy, text, names) == "N and N"
    assert run_script(escaped, text, names) == "N and AxB"
    assert escaped_for_regex("a.b\n(c)/") == "a\\.b\\n\\(c\\)\\/"


def test_only_dollar_digits_are_read_in_the_replacement() -> None:
    """1.12.6 (recorded, tests/oracle/st126/regex): `$<name>`, `$&`, `$$` stay as written;
    a named group is reached by its number."""
    rule = script(findRegex=r"/(?<who>\w+) waves/g", replaceString="$<who> $1 $& $$ nods")
    assert run_script(rule, "Kael waves", same) == "$<who> Kael $& $$ nods"


def test_a_group_past_the_last_is_the_offset_then_the_text() -> None:
    """What 1.12.6's replacer receives after the groups: the offset in UTF-16 code units
    (nothing at 0), then the whole text; further numbers print nothing."""
    offset = script(findRegex="/(fox)/", replaceString="[$2]")
    whole = script(findRegex="/(fox)/", replaceString="[$3|$4]")
    assert run_script(offset, "a fox", same) == "a [2]"
    assert run_script(offset, "fox", same) == "[]"
    assert run_script(offset, "\U0001f600 fox", same) == "\U0001f600 [3]"
    assert run_script(whole, "a fox", same) == "a [a fox|]"


def test_without_u_a_pattern_matches_utf16_code_units() -> None:
    """Outside the BMP a character is two code units to a pattern without `u`."""
    smile = "\U0001f600"
    assert run_script(script(findRegex="/./g", replaceString="x"), f"a{smile}b", same) == "xxxx"
    assert run_script(script(findRegex="/./gu", replaceString="x"), f"a{smile}b", same) == "xxx"
    assert run_script(script(findRegex="/^.$/", replaceString="1"), smile, same) == smile
    cls = script(findRegex=f"/[{smile}]/g", replaceString="x")
    assert run_script(cls, f"a{smile}b", same) == "axxb"
    half = script(findRegex="/\\uDE00/", replaceString="")
    assert run_script(half, f"{smile}!", same) == "\ufffd!"
    literal = script(findRegex="/\\u{1F600}/g", replaceString="x")
    assert run_script(literal, f"{smile} u{{1F600}}", same) == f"{smile} x"


def test_storage_scripts_also_shape_the_prompt_section_6_1() -> None:
    """1.12.6 runs a storage script again over the history as the prompt is built, by depth;
    a display-only one never reaches the prompt."""
    stored = script(findRegex="/cat/g", replaceString="dog", placement=[1], maxDepth=0)
    shown = script(findRegex="/red/g", replaceString="RED", markdownOnly=True)
    messages = chat(("character", "red"), ("user", "a cat"), ("character", "ok"), ("user", "cat"))
    ctx = context(messages=messages, regex_scripts=(stored, shown))
    got = [c for r, c, _ in pairs(build(ctx)) if r != "system"]
    assert got == ["red", "a cat", "ok", "dog"]


def test_lorebook_entries_at_a_depth_are_regexed_by_that_depth() -> None:
    """world-info.js: an @depth entry is regexed with its depth; other entries with none."""
    book = world_info_from_json(
        {
            "entries": {
                "0": {
                    "uid": 0,
                    "key": [],
                    "content": "deep red",
                    "constant": True,
                    "position": 4,
                    "depth": 3,
                },
                "1": {"uid": 1, "key": [], "content": "top red", "constant": True, "position": 0},
            }
        },
        name="Book",
    )
    rule = script(findRegex="/red/g", replaceString="blue", placement=[5], maxDepth=2)
    character = replace(SERAPHINA, linked_lorebook="Book")
    ctx = context(character=character, lorebooks={"Book": book}, regex_scripts=(rule,))
    contents = [c for _, c, _ in pairs(build(ctx))]
    assert "top blue" in contents
    assert any("deep red" in c for c in contents)
