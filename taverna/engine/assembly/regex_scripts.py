"""Regex scripts: the find/replace rules that reshape what is stored, shown and sent.

SillyTavern runs the user's regex scripts (global ones, then the preset's, then the
character's, each layer only when the person allowed it) at three moments
(algo-chat-ops.md §6.1, formats-extensions.md §1.2): when a message is stored or
edited (scripts with neither "only" flag rewrite the stored text), when it is shown
(`markdownOnly` ones, the store keeps the original) and when the prompt is built
(`promptOnly` ones and again the storage ones, over each chat message with its depth
and over lorebook entry contents). Patterns are JavaScript syntax, run by a safe
engine with a time limit: a pattern that backtracks without end leaves the text
unchanged instead of hanging the turn, and all scripts and regex keys of a turn
together stay within the turn's `RegexBudget`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from enum import StrEnum
from functools import lru_cache

from taverna.engine.lorebook.jsregex import JsRegex, compile_js_regex
from taverna.engine.lorebook.regex_budget import REGEX_SCRIPT, RegexBudget
from taverna.model.regex_script import RegexPlacement, RegexScript

SCRIPT_TIMEOUT = 0.25  # seconds one script may spend on one text

Substitute = Callable[[str], str]

_SHAPE = re.compile(r"(/?)(.+)\1([a-z]*)", re.IGNORECASE)
_VALID_FLAGS = re.compile(r"^(?!.*?(.).*?\1)[gmixXsuUAJ]+$")
_MATCH_MACRO = re.compile(r"\{\{match\}\}", re.IGNORECASE)
# 1.12.6 reads only `$` and digits in a replacement (`$<name>`, `$&`, `$$` stay as written).
_GROUP = re.compile(r"\$(\d+)")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_LONE = re.compile("[\ud800-\udfff]")
_MACRO = re.compile(r"\{\{.*?\}\}", re.DOTALL)
_REGEX_SPECIAL = re.compile(r"[\n\r\t\v\f\0.^$*+?{}\[\]\\/|()]")
_CONTROL_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v", "\f": "\\f", "\0": "\\0"}


class RegexUse(StrEnum):
    """The moment a text is regexed: which scripts run then (algo-chat-ops.md §6.1)."""

    STORE = "store"  # a message is stored or edited: scripts with neither flag
    DISPLAY = "display"  # a message is shown: `markdownOnly` scripts
    PROMPT = "prompt"  # the prompt is built: `promptOnly` and the storage scripts


def escaped_for_regex(value: str) -> str:
    """A macro's value made literal inside a pattern (`substituteRegex` 2, "escaped")."""
    return _REGEX_SPECIAL.sub(lambda m: _CONTROL_ESCAPES.get(m.group(0), "\\" + m.group(0)), value)


def find_pattern(script: RegexScript, substitute: Substitute) -> str:
    """The script's find pattern with its macros expanded as `substituteRegex` says:
    0 not at all, 1 as they print, 2 each macro's value regex-escaped."""
    mode = script.substitution_mode
    if mode == 1:
        return substitute(script.find_regex)
    if mode == 2:
        return _MACRO.sub(lambda m: escaped_for_regex(substitute(m.group(0))), script.find_regex)
    return script.find_regex  # 0, or a number SillyTavern does not know


@lru_cache(maxsize=1024)
def regex_from_string(text: str) -> tuple[JsRegex, bool] | None:
    """SillyTavern `regexFromString`: `/body/flags` or a bare pattern; and whether it is global.

    Invalid flag letters make the whole text the pattern; a pattern JavaScript cannot
    compile gives None (the script then does nothing). Compiled once per text (SillyTavern
    keeps a cache of compiled scripts too): a chat's scripts run on every message.
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


def code_units(text: str) -> str:
    """`text` as a JavaScript string holds it: each character outside the BMP as its two
    UTF-16 surrogates, which a pattern without the `u` flag sees one by one."""

    def split(found: re.Match[str]) -> str:
        value = ord(found.group(0)) - 0x10000
        return chr(0xD800 + (value >> 10)) + chr(0xDC00 + (value & 0x3FF))

    return _ASTRAL.sub(split, text)


def characters(text: str) -> str:
    """`code_units` undone: surrogate pairs joined again. A surrogate left alone (a pattern
    without `u` replaced half of a pair) becomes U+FFFD: stored text cannot hold it."""

    def join(found: re.Match[str]) -> str:
        pair = found.group(0)
        return chr(0x10000 + ((ord(pair[0]) - 0xD800) << 10) + ord(pair[1]) - 0xDC00)

    return _LONE.sub("\ufffd", _PAIR.sub(join, text))


def run_script(
    script: RegexScript, text: str, substitute: Substitute, budget: RegexBudget | None = None
) -> str:
    """One script over one text (SillyTavern `runRegexScript`), within the turn's `budget`
    when one is given: a script a time limit stops leaves the text as it was.

    Without the `u` flag a JavaScript pattern matches UTF-16 code units, so a text or
    pattern with characters outside the BMP is matched as code units (`.` takes half an
    emoji). In the replacement only `$` and digits are read: `$0` (and `{{match}}`) the
    match, `$1`... a group, and past the last group what 1.12.6's replacer receives next:
    the match's offset (in code units; nothing at 0), then the whole text.
    """
    if script.disabled or not script.find_regex or not text:
        return text
    find = find_pattern(script, substitute)
    parsed = regex_from_string(find)
    if parsed is None:
        return text
    compiled, every = parsed
    units = "u" not in compiled.flags and bool(_ASTRAL.search(find) or _ASTRAL.search(text))
    subject = text
    if units:
        parsed = regex_from_string(code_units(find))
        if parsed is None:
            return text
        compiled, every = parsed
        subject = code_units(text)
    template = _MATCH_MACRO.sub("$0", script.replace_string)
    trims = [substitute(t) for t in script.trim_strings]
    if units:
        trims = [code_units(t) for t in trims]

    def trimmed(value: str) -> str:
        for trim in trims:
            value = value.replace(trim, "")
        return value

    def replacement(match: re.Match[str]) -> str:
        groups = match.re.groups or 0

        def group(reference: re.Match[str]) -> str:
            index = int(reference.group(1))
            if index <= groups:
                return trimmed(match.group(index) or "")
            if index == groups + 1:  # the offset, in code units as JavaScript counts
                offset = match.start() if units else len(code_units(subject[: match.start()]))
                return str(offset) if offset else ""
            if index == groups + 2:
                return trimmed(subject)
            return ""

        return substitute(_GROUP.sub(group, template))

    def run(timeout: float) -> str:
        # concurrent: the GIL is let go while the pattern matches, so a pattern that runs
        # to its limit holds up no other request of the server meanwhile
        found = compiled.pattern.sub(
            replacement, subject, count=0 if every else 1, timeout=timeout, concurrent=True
        )
        return characters(str(found)) if units else str(found)

    if budget is None:
        try:
            return run(SCRIPT_TIMEOUT)
        except TimeoutError:
            return text
    result = budget.run(
        run, limit=SCRIPT_TIMEOUT, kind=REGEX_SCRIPT, source=script.script_name, pattern=find
    )
    return text if result is None else result


def applies(
    script: RegexScript,
    placement: RegexPlacement,
    depth: int | None,
    use: RegexUse = RegexUse.PROMPT,
    *,
    edit: bool = False,
) -> bool:
    """Whether a script runs on a text of this placement and depth at this moment
    (algo-chat-ops.md §6.1, §6.2). `edit`: the text is a person's edit of a stored
    message, which only `runOnEdit` scripts rewrite."""
    markdown, prompt = script.markdown_only, script.prompt_only
    if use is RegexUse.DISPLAY:
        wanted = markdown
    elif use is RegexUse.PROMPT:
        # 1.12.6 runs the storage scripts again as the prompt is built.
        wanted = prompt or not markdown
    else:
        wanted = not markdown and not prompt and (script.run_on_edit or not edit)
    if not wanted:
        return False
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
    return regexed(
        text, placement, scripts, substitute, RegexUse.PROMPT, depth=depth, budget=budget
    )


def regexed(
    text: str,
    placement: RegexPlacement,
    scripts: Sequence[RegexScript],
    substitute: Substitute,
    use: RegexUse,
    *,
    depth: int | None = None,
    edit: bool = False,
    budget: RegexBudget | None = None,
) -> str:
    """SillyTavern `getRegexedString`: the scripts that apply at this moment, in order,
    each one's output feeding the next."""
    for script in scripts:
        if applies(script, placement, depth, use, edit=edit):
            text = run_script(script, text, substitute, budget)
    return text
