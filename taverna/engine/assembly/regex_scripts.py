"""Regex scripts at prompt time: the find/replace rules that reshape what the model sees.

SillyTavern runs the user's regex scripts (global ones, then the character's when the
user allowed them) over each chat message as the prompt is built, and over lorebook
entry contents (algo-chat-ops.md §6, formats-extensions.md §1). Patterns are
JavaScript syntax, run by a safe engine with a time limit: a pattern that backtracks
without end leaves the text unchanged instead of hanging the turn, and all scripts
and regex keys of a turn together stay within the turn's `RegexBudget`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from taverna.engine.lorebook.jsregex import JsRegex, compile_js_regex
from taverna.engine.lorebook.regex_budget import REGEX_SCRIPT, RegexBudget
from taverna.model.regex_script import RegexPlacement, RegexScript

SCRIPT_TIMEOUT = 0.25  # seconds one script may spend on one text

Substitute = Callable[[str], str]

_SHAPE = re.compile(r"(/?)(.+)\1([a-z]*)", re.IGNORECASE)
_VALID_FLAGS = re.compile(r"^(?!.*?(.).*?\1)[gmixXsuUAJ]+$")
_MATCH_MACRO = re.compile(r"\{\{match\}\}", re.IGNORECASE)
_GROUP = re.compile(r"\$(\d+)")


def regex_from_string(text: str) -> tuple[JsRegex, bool] | None:
    """SillyTavern `regexFromString`: `/body/flags` or a bare pattern; and whether it is global.

    Invalid flag letters make the whole text the pattern; a pattern JavaScript cannot
    compile gives None (the script then does nothing).
    """
    shape = _SHAPE.match(text)
    if shape is None:
        return None
    body, flags = shape.group(2), shape.group(3)
    if flags and not _VALID_FLAGS.match(flags):
        body, flags = text, ""
    compiled = compile_js_regex(body, flags)
    if compiled is None:
        return None
    return compiled, "g" in flags


def run_script(
    script: RegexScript, text: str, substitute: Substitute, budget: RegexBudget | None = None
) -> str:
    """One script over one text (SillyTavern `runRegexScript`), within the turn's `budget`
    when one is given: a script a time limit stops leaves the text as it was."""
    if script.disabled or not script.find_regex or not text:
        return text
    find = substitute(script.find_regex) if script.substitution_mode else script.find_regex
    parsed = regex_from_string(find)
    if parsed is None:
        return text
    compiled, every = parsed
    template = _MATCH_MACRO.sub("$0", script.replace_string)
    trims = [substitute(t) for t in script.trim_strings]

    def replacement(match: re.Match[str]) -> str:
        def group(number: re.Match[str]) -> str:
            index = int(number.group(1))
            value = match.group(index) if index <= (match.re.groups or 0) else None
            if not value:
                return ""
            for trim in trims:
                value = value.replace(trim, "")
            return value

        return substitute(_GROUP.sub(group, template))

    def run(timeout: float) -> str:
        return str(
            compiled.pattern.sub(replacement, text, count=0 if every else 1, timeout=timeout)
        )

    if budget is None:
        try:
            return run(SCRIPT_TIMEOUT)
        except TimeoutError:
            return text
    result = budget.run(
        run, limit=SCRIPT_TIMEOUT, kind=REGEX_SCRIPT, source=script.script_name, pattern=find
    )
    return text if result is None else result


def applies(script: RegexScript, placement: RegexPlacement, depth: int | None) -> bool:
    """Whether a script runs on a prompt text of this placement and depth (§6.1, §6.2)."""
    if script.markdown_only and not script.prompt_only:
        return False  # display only
    if depth is not None and depth >= 0:
        if script.min_depth is not None and script.min_depth >= 0 and depth < script.min_depth:
            return False
        if script.max_depth is not None and script.max_depth >= 0 and depth > script.max_depth:
            return False
    return int(placement) in script.placement


def regexed_for_prompt(
    text: str,
    placement: RegexPlacement,
    scripts: Sequence[RegexScript],
    substitute: Substitute,
    depth: int | None = None,
    budget: RegexBudget | None = None,
) -> str:
    """SillyTavern `getRegexedString(..., {isPrompt: true, depth})`: each applying script in turn."""
    for script in scripts:
        if applies(script, placement, depth):
            text = run_script(script, text, substitute, budget)
    return text
