"""Text: /len /trimstart /trimend /substr /replace /upper /lower /split /join /echo and tests."""

from __future__ import annotations

import json
import re

import regex

from taverna.engine.lorebook.jsregex import compile_js_regex
from taverna.engine.macros.js import js_number
from taverna.engine.script.commands.flow import condition
from taverna.engine.script.errors import ScriptError
from taverna.engine.script.interpreter import Call, Command
from taverna.engine.script.scope import ClosureValue, ScriptValue
from taverna.engine.script.values import js_value_text, parse_json

REGEX_SECONDS = 0.5  # one /replace pattern on one text
_REGEX = re.compile(r"^/([\s\S]+)/([dgimsuy]*)$")
_REFERENCE = re.compile(r"\$(\d+|&)")
_PUNCTUATION = set('.!?*")}`]$。！？”）】’」_')


def js_length(text: str) -> int:
    """`text.length`: UTF-16 code units (an emoji outside the BMP counts 2)."""
    return len(text.encode("utf-16-le")) // 2


def length(call: Call) -> ScriptValue:
    value = call.value
    if isinstance(value, ClosureValue) or value is None:
        return "0"
    text = call.text()
    parsed = parse_json(text)
    if parsed is None and text.strip() != "null":
        return str(js_length(text))
    if isinstance(parsed, list | dict):
        return str(len(parsed))
    if isinstance(parsed, str):
        return str(js_length(parsed))
    if isinstance(parsed, bool) or parsed is None:
        return "0"
    if isinstance(parsed, int | float):
        return str(len(js_value_text(parsed)))
    return "0"


def trim_start(call: Call) -> ScriptValue:
    """SillyTavern's `trimToStartSentence`: drop the text before the first full sentence."""
    text = call.text()
    if not text:
        return ""
    positions = [text.find(mark) for mark in ".!?"]
    first = positions[0]
    newline = False
    for position in positions[1:]:
        if 0 < position < first:
            first = position
    line = text.find("\n")
    if 0 < line < first:
        first, newline = line, True
    if first > 0:
        return text[first + 1 :] if newline else text[first + 2 :]
    return text


def _is_emoji(char: str) -> bool:
    return regex.match(r"\p{Emoji_Presentation}|\p{Extended_Pictographic}", char) is not None


def trim_end(call: Call) -> ScriptValue:
    """SillyTavern's `trimToEndSentence`: drop an unfinished last sentence."""
    text = call.text()
    if not text:
        return ""
    last = -1
    for index in range(len(text) - 1, -1, -1):
        char = text[index]
        if char in _PUNCTUATION or _is_emoji(char):
            last = index - 1 if index > 0 and text[index - 1].isspace() else index
            break
    if last == -1:
        return text.rstrip()
    return text[: last + 1].rstrip()


def _integer(call: Call, name: str) -> int | None:
    raw = call.arg(name)
    if raw is None or raw == "":
        return None
    number = js_number(raw)
    if number is None or number != number:
        raise ScriptError(
            f"{name}={raw!r} is not a number",
            code="is_not_number",
            params={"name": str(name), "raw": str(raw)},
        )
    return int(number)


def substr(call: Call) -> ScriptValue:
    text = call.text()
    start = _integer(call, "start") or 0
    end = _integer(call, "end")
    return text[start:end]


def replace(call: Call) -> ScriptValue:
    text = call.text()
    pattern = call.arg("pattern")
    if pattern is None:
        raise ScriptError("give pattern=", code="give_pattern")
    replacer = call.arg("replacer", "") or ""
    mode = (call.arg("mode", "literal") or "literal").lower()
    if mode == "literal":
        return text.replace(pattern, replacer) if pattern else text
    if mode != "regex":
        raise ScriptError(
            f"mode must be literal or regex, not {mode!r}",
            code="mode_must_be_literal_or",
            params={"mode": str(mode)},
        )
    match = _REGEX.match(pattern)
    source, flags = (match.group(1), match.group(2)) if match else (pattern, "")
    compiled = compile_js_regex(source, flags.replace("g", "").replace("d", ""))
    if compiled is None:
        raise ScriptError(
            f"{pattern!r} is not a valid regular expression",
            code="is_not_valid_regular_expression",
            params={"pattern": str(pattern)},
        )

    def expand(found: regex.Match[str]) -> str:
        def group(reference: re.Match[str]) -> str:
            name = reference.group(1)
            if name == "&":
                return str(found.group(0))
            number = int(name)
            if 0 < number <= len(found.groups()):
                return str(found.group(number) or "")
            return reference.group(0)

        return _REFERENCE.sub(group, replacer)

    try:
        return str(
            compiled.pattern.sub(
                expand, text, count=0 if "g" in flags else 1, timeout=REGEX_SECONDS
            )
        )
    except TimeoutError:
        raise ScriptError(
            f"the pattern {pattern!r} took too long on this text",
            code="pattern_took_too_long_on",
            params={"pattern": str(pattern)},
        ) from None
    except (regex.error, IndexError) as error:
        raise ScriptError(
            f"cannot replace with {replacer!r}: {error}",
            code="cannot_replace_with",
            params={"replacer": str(replacer), "error": str(error)},
        ) from None


def upper(call: Call) -> ScriptValue:
    return call.text().upper()


def lower(call: Call) -> ScriptValue:
    return call.text().lower()


def split(call: Call) -> ScriptValue:
    text = call.text()
    separator = call.arg("find", ",") or ","
    trim = (call.arg("trim", "true") or "true").lower() not in ("false", "off", "0")
    parts = text.split(separator)
    if trim:
        parts = [part.strip() for part in parts]
    return json.dumps(parts, ensure_ascii=False, separators=(",", ":"))


def join(call: Call) -> ScriptValue:
    text = call.text()
    glue = call.arg("glue", ", ")
    parsed = parse_json(text)
    if isinstance(parsed, list):
        items = [js_value_text(item) if not isinstance(item, str) else item for item in parsed]
    else:
        items = [part for part in text.split(" ") if part]
    return (glue if glue is not None else ", ").join(items)


def run_regex(call: Call) -> ScriptValue:
    """`/regex name=Script text`: a regex script run on the text by name; without a name
    or such a script the text comes back as it was (SillyTavern 1.12.6 only warns)."""
    text = call.text()
    name = call.arg("name")
    if not name:
        call.run.host.notify("No regex script name provided.", "warning")
        return text
    found = call.run.host.run_regex(name, text, call.run.macros)
    if found is None:
        call.run.host.notify(f'Regex script "{name}" not found.', "warning")
        return text
    return found


def echo(call: Call) -> ScriptValue:
    text = call.text()
    if text:
        call.run.host.notify(text, call.arg("severity", "info") or "info")
    return text


def _comparison(rule: str) -> Command:
    def compare(call: Call) -> ScriptValue:
        call.named["rule"] = rule
        return "true" if condition(call) else "false"

    return Command(
        rule,
        compare,
        f"'true' when left {rule} right holds (the /if test), else 'false'.",
        usage=f"/{rule} left=a right=b",
    )


COMMANDS = (
    Command(
        "regex",
        run_regex,
        "Run a regex script (global or the character's) on the text by its name.",
        usage="/regex name=Script text",
    ),
    Command(
        "len", length, "Length of a text, a JSON list or object.", ("length",), usage="/len text"
    ),
    Command(
        "trimstart",
        trim_start,
        "Drop the text before the first full sentence.",
        usage="/trimstart text",
    ),
    Command("trimend", trim_end, "Drop an unfinished last sentence.", usage="/trimend text"),
    Command(
        "substr",
        substr,
        "Part of the text from start (0) to end (exclusive; negative counts from the end).",
        ("substring",),
        usage="/substr start=0 end=5 text",
    ),
    Command(
        "replace",
        replace,
        "Replace pattern by replacer: mode=literal (every occurrence) or mode=regex (/re/flags).",
        ("re",),
        usage="/replace mode=literal pattern=a replacer=b text",
    ),
    Command("upper", upper, "Upper-case text.", ("uppercase", "toupper"), usage="/upper text"),
    Command("lower", lower, "Lower-case text.", ("lowercase", "tolower"), usage="/lower text"),
    Command(
        "split",
        split,
        "Split text at find= (',') into a JSON list (parts trimmed unless trim=off).",
        usage="/split find=, [trim=true] text",
    ),
    Command(
        "join",
        join,
        "Join a JSON list (or words) with glue= (', ').",
        usage='/join glue=", " ["a","b"]',
    ),
    Command(
        "echo",
        echo,
        "Show a notice and return the text.",
        usage="/echo [severity=info|warning|error|success] text",
    ),
    *(_comparison(rule) for rule in ("eq", "neq", "lt", "gt", "lte", "gte")),
)
