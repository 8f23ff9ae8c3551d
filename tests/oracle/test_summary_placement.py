"""A stored summary placed as SillyTavern 1.12.6 places it, in every position.

Each case starts from an oracle case (SillyTavern's own input files and the body it
sent), gives its chat summaries in `extra.memory` and its settings a Summarize
block, and expects SillyTavern's body with the summary put where its extension
prompt `1_memory` goes (algo-chat-ops.md §3.1, algo-prompt-assembly.md §3.3 step 5,
§5.2 and §6.3): before or after the main prompt (Chat Completion) or the story string
(Text Completion), in the chat at a depth as a role, or nowhere.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from typer.testing import CliRunner

from taverna.cli.main import _register, app

SUMMARY = "Aria and User packed rope and bread and set out for the lighthouse."
OLDER = "OLDER SUMMARY: must not appear, a newer one exists."
ON_LAST = "ON THE LAST MESSAGE: SillyTavern leaves the last message's summary out."


def _compare(cases: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("oracle_compare", cases.parent / "compare.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _prepare(
    oracle_cases: Path, base: str, tmp: Path, memory: dict[str, Any], carriers: dict[int, str]
) -> tuple[Path, dict[str, Any]]:
    """A copy of case `base` whose chat carries `carriers` (message index -> summary)."""
    source = oracle_cases / base
    case_dir = tmp / base
    shutil.copytree(source, case_dir)
    lines = (case_dir / "chat.jsonl").read_text(encoding="utf-8").splitlines()
    out = [lines[0]]
    for index, line in enumerate(lines[1:]):
        message = json.loads(line)
        if index in carriers:
            message.setdefault("extra", {})["memory"] = carriers[index]
        out.append(json.dumps(message, ensure_ascii=False))
    (case_dir / "chat.jsonl").write_text("\n".join(out) + "\n", encoding="utf-8")
    settings = json.loads((case_dir / "settings.json").read_text(encoding="utf-8"))
    if memory.get("_drop"):
        # a settings.json without the extension's block: SillyTavern's defaults apply
        del settings["extension_settings"]["memory"]
    else:
        settings["extension_settings"]["memory"].update(memory)
    if memory.get("_disable"):
        settings["extension_settings"].setdefault("disabledExtensions", []).append("memory")
    (case_dir / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    case = json.loads((case_dir / "case.json").read_text(encoding="utf-8"))
    return case_dir, case


def _run(oracle_cases: Path, case_dir: Path, case: dict[str, Any]) -> dict[str, Any]:
    compare = _compare(oracle_cases)
    _register()
    command = compare.command_for(case_dir, case, ["taverna"], 0)[1:]
    result = CliRunner().invoke(app, command, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    got: dict[str, Any] = json.loads(result.stdout)
    return got


def _expected(oracle_cases: Path, base: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((oracle_cases / base / "expected.json").read_text())
    return data


# ------------------------------------------------------------- Chat Completion

CC = "06_hidden_and_swipes"
# 06's chat: 0 greeting, 1 user, 2 assistant, 3 and 4 hidden, 5 user, 6 assistant (swiped),
# 7 user (last). The newest summary sits on a hidden message: SillyTavern reads it too.
CC_CARRIERS = {2: OLDER, 4: SUMMARY, 7: ON_LAST}


def _cc_insert(
    messages: list[dict[str, Any]], at: int, role: str, text: str
) -> list[dict[str, Any]]:
    return [*messages[:at], {"role": role, "content": text}, *messages[at:]]


CC_CASES: list[tuple[str, dict[str, Any], Any]] = [
    # after the main prompt (position 0, the default)
    ("after_main", {"source": "main", "position": 0}, (1, "system", f"[Summary: {SUMMARY}]")),
    # before the main prompt (position 2)
    ("before_main", {"source": "main", "position": 2}, (0, "system", f"[Summary: {SUMMARY}]")),
    # after the main prompt, as the role chosen: relative prompts keep their role
    (
        "after_main_as_user",
        {"source": "main", "position": 0, "role": 1},
        (1, "user", f"[Summary: {SUMMARY}]"),
    ),
    # in the chat at depth 2: before the second newest message
    (
        "in_chat_depth_2",
        {"source": "main", "position": 1, "depth": 2, "role": 0},
        (-2, "system", f"[Summary: {SUMMARY}]"),
    ),
    # in the chat at depth 0 as the assistant: after the last message
    (
        "in_chat_depth_0_assistant",
        {"source": "main", "position": "1", "depth": 0, "role": 2},
        (None, "assistant", f"[Summary: {SUMMARY}]"),
    ),
    # the template's macros, and an empty template's fallback
    (
        "template_macros",
        {"source": "main", "position": 0, "template": "{{char}} remembers: {{summary}}"},
        (1, "system", f"Aria remembers: {SUMMARY}"),
    ),
    (
        "empty_template",
        {"source": "main", "position": 0, "template": ""},
        (1, "system", f"Summary: {SUMMARY}"),
    ),
    # nowhere (position -1), and a source 1.12.6 cannot reach (the Extras API)
    ("position_none", {"source": "main", "position": -1}, None),
    ("extras_source", {"source": "extras", "position": 0}, None),
    # no Summarize settings at all: 1.12.6's default source is the Extras API
    ("no_settings", {"_drop": True}, None),
    # the extension switched off
    ("disabled", {"source": "main", "position": 0, "_disable": True}, None),
]


@pytest.mark.parametrize(("name", "memory", "placed"), CC_CASES, ids=[c[0] for c in CC_CASES])
def test_chat_completion_summary_placement(
    name: str, memory: dict[str, Any], placed: Any, oracle_cases: Path, tmp_path: Path
) -> None:
    case_dir, case = _prepare(oracle_cases, CC, tmp_path, memory, CC_CARRIERS)
    got = _run(oracle_cases, case_dir, case)
    expected = _expected(oracle_cases, CC)
    messages = list(expected["messages"])
    if placed is not None:
        at, role, text = placed
        if at is None:
            messages = [*messages, {"role": role, "content": text}]
        elif at < 0:
            messages = _cc_insert(messages, len(messages) + at, role, text)
        else:
            messages = _cc_insert(messages, at, role, text)
    expected = {**expected, "messages": messages}
    compare = _compare(oracle_cases)
    assert compare.lines_of(got, "cc") == compare.lines_of(expected, "cc")


# ------------------------------------------------------------- Text Completion

TC = "07_text_completion_chatml"
# 07's chat: 10 messages, the last a user message; the Author's Note is at depth 2 (system)
# and the character's note at depth 4 (system).
TC_CARRIERS = {3: OLDER, 6: SUMMARY, 9: ON_LAST}
STORY_END = (
    "Scenario: User has hired Aria to guide them through the marshes to the old lighthouse.\n"
)
AN_BLOCK = "<|im_start|>system\n[Author's note: keep the reply under three sentences.]<|im_end|>\n"


def _tc_after_story(prompt: str, text: str) -> str:
    # §6.3: the IN_PROMPT anchor is wrapped in newlines and follows the story string.
    assert STORY_END in prompt
    return prompt.replace(STORY_END, STORY_END + "\n" + text + "\n", 1)


def _tc_before_story(prompt: str, text: str) -> str:
    # §6.3: the BEFORE_PROMPT anchor, wrapped in newlines, then its start trimmed.
    return text + "\n" + prompt


def _tc_merged_with_note(prompt: str, text: str) -> str:
    # §5.2: at one depth and role the prompts join in key order: 1_memory before the note.
    assert AN_BLOCK in prompt
    merged = AN_BLOCK.replace("system\n", "system\n" + text + "\n", 1)
    return prompt.replace(AN_BLOCK, merged, 1)


def _tc_before_last_as_assistant(prompt: str, text: str) -> str:
    # depth 1: before the newest message (the user's), an assistant turn of its own, named
    # as the character's turns are (script.js doChatInject gives it the character's name)
    last = "<|im_start|>user\nUser: Fine. Tell me about the lighthouse keeper.<|im_end|>\n"
    assert last in prompt
    return prompt.replace(last, f"<|im_start|>assistant\nAria: {text}<|im_end|>\n" + last, 1)


TC_CASES: list[tuple[str, dict[str, Any], Any]] = [
    ("after_story", {"source": "main", "position": 0}, _tc_after_story),
    ("before_story", {"source": "main", "position": 2}, _tc_before_story),
    (
        "in_chat_with_note",
        {"source": "main", "position": 1, "depth": 2, "role": 0},
        _tc_merged_with_note,
    ),
    (
        "in_chat_assistant",
        {"source": "main", "position": 1, "depth": 1, "role": 2},
        _tc_before_last_as_assistant,
    ),
    ("position_none", {"source": "main", "position": -1}, None),
    ("extras_source", {"source": "extras", "position": 2}, None),
]


@pytest.mark.parametrize(("name", "memory", "place"), TC_CASES, ids=[c[0] for c in TC_CASES])
def test_text_completion_summary_placement(
    name: str, memory: dict[str, Any], place: Any, oracle_cases: Path, tmp_path: Path
) -> None:
    case_dir, case = _prepare(oracle_cases, TC, tmp_path, memory, TC_CARRIERS)
    got = _run(oracle_cases, case_dir, case)
    expected = _expected(oracle_cases, TC)
    if place is not None:
        expected = {**expected, "prompt": place(expected["prompt"], f"[Summary: {SUMMARY}]")}
    compare = _compare(oracle_cases)
    assert compare.lines_of(got, "tc") == compare.lines_of(expected, "tc")


@pytest.mark.parametrize(
    ("base", "memory", "carriers", "expected"),
    [
        (TC, {"source": "main", "position": 0}, TC_CARRIERS, "after story string: 1_memory"),
        (TC, {"source": "main", "position": 2}, TC_CARRIERS, "before story string: 1_memory"),
        (TC, {"source": "main", "position": 1, "depth": 2}, TC_CARRIERS, "1_memory"),
        (CC, {"source": "main", "position": 1, "depth": 2}, CC_CARRIERS, "1_memory"),
        (CC, {"source": "main", "position": 0}, CC_CARRIERS, "summary"),
    ],
)
def test_the_ledger_names_the_summary_and_its_message(
    base: str,
    memory: dict[str, Any],
    carriers: dict[int, str],
    expected: str,
    oracle_cases: Path,
    tmp_path: Path,
) -> None:
    case_dir, case = _prepare(oracle_cases, base, tmp_path, memory, carriers)
    compare = _compare(oracle_cases)
    _register()
    command = compare.command_for(case_dir, case, ["taverna"], 0)[1:]
    command = [c for c in command if c != "--json"] + ["--ledger"]
    result = CliRunner().invoke(app, command, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    # the newest summary before the last message: on message 4 (Chat) or 6 (Text)
    message = "4" if base == CC else "6"
    lines = [line for line in result.output.splitlines() if expected in line]
    assert lines, result.output
    if expected == "summary":
        assert any(f" {message} " in f" {line} " for line in lines), lines
    else:
        assert any(f"(summary of message {message})" in line for line in lines), lines
