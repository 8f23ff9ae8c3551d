"""Lorebook regex keys (`/pattern/flags`): JavaScript syntax run safely in Python.

A key such as `/\\bkael\\b/i` is a JavaScript regular expression in SillyTavern
(algo-world-info.md §3.1). Python's syntax differs where it matters to results: `\\w`,
`\\d` and `\\b` are ASCII in JavaScript, `$` means only "end of input" without the `m`
flag, `.` also stops at `\\r` and the Unicode line separators, `[^]` is "anything".
`compile_js_regex` rewrites those into equivalent Python and compiles the result with
the `regex` module, whose matching takes a timeout: a user's pattern that backtracks
catastrophically gives "no match" after `REGEX_TIMEOUT` seconds instead of hanging the
process, and all of a turn's patterns together stay within its `RegexBudget`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import regex

from taverna.engine.lorebook.regex_budget import LOREBOOK_KEY, RegexBudget

__all__ = ["REGEX_TIMEOUT", "JsRegex", "compile_js_regex", "parse_regex_key"]

REGEX_TIMEOUT = 0.05  # seconds one regex key may spend on one haystack

_KEY_SHAPE = re.compile(r"/([\s\S]+?)/([gimsuy]*)")
_UNESCAPED_SLASH = re.compile(r"(^|[^\\])/")
_WORD = "A-Za-z0-9_"
_JS_SPACE = (
    "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
)
_LINE_END = "\\n\\r\\u2028\\u2029"
_CLASS_ESCAPES = {
    "d": "0-9",
    "w": _WORD,
    "s": _JS_SPACE,
}
_OUTSIDE_ESCAPES = {
    "d": "[0-9]",
    "D": "[^0-9]",
    "w": f"[{_WORD}]",
    "W": f"[^{_WORD}]",
    "s": f"[{_JS_SPACE}]",
    "S": f"[^{_JS_SPACE}]",
    "b": f"(?:(?<=[{_WORD}])(?![{_WORD}])|(?<![{_WORD}])(?=[{_WORD}]))",
    "B": f"(?:(?<=[{_WORD}])(?=[{_WORD}])|(?<![{_WORD}])(?![{_WORD}]))",
}
_HEX = {"u": re.compile("[0-9A-Fa-f]{4}"), "x": re.compile("[0-9A-Fa-f]{2}")}
# Escapes whose meaning is the same in both engines.
_PASS_THROUGH = set("tnrvf0123456789xuc^$\\.*+?()[]{}|/-")


@dataclass(frozen=True, slots=True)
class JsRegex:
    """A compiled regex key; `sticky` (flag `y`) anchors the test at the start."""

    source: str
    flags: str
    pattern: regex.Pattern[str]
    sticky: bool = False

    @property
    def written(self) -> str:
        """The pattern as a person wrote it: `/source/flags`."""
        return f"/{self.source}/{self.flags}"

    def test(self, haystack: str, budget: RegexBudget | None = None, source: str = "") -> bool:
        """JavaScript's `RegExp.test` on a fresh regex; a timeout counts as no match.

        With a `budget`, the test also stays within the turn's time for user regexes
        (and is not run once that is spent); `source` names the key's entry for its notes.
        """
        if budget is None:
            try:
                return self._test(haystack, REGEX_TIMEOUT)
            except TimeoutError:
                return False
        return self.test_within(haystack, budget, source) is True

    def test_within(self, haystack: str, budget: RegexBudget, source: str) -> bool | None:
        """`test` within the turn's `budget`; None when a time limit stopped it (noted)."""
        return budget.run(
            lambda timeout: self._test(haystack, timeout),
            limit=REGEX_TIMEOUT,
            kind=LOREBOOK_KEY,
            source=source,
            pattern=self.written,
        )

    def _test(self, haystack: str, timeout: float) -> bool:
        if self.sticky:
            return self.pattern.match(haystack, timeout=timeout) is not None
        return self.pattern.search(haystack, timeout=timeout) is not None


def _translate(source: str, flags: str) -> str:
    out: list[str] = []
    in_class = False
    multiline = "m" in flags
    dotall = "s" in flags
    unicode = "u" in flags
    i = 0
    n = len(source)
    while i < n:
        char = source[i]
        if char == "\\" and i + 1 < n:
            nxt = source[i + 1]
            i += 2
            if in_class:
                if nxt in _CLASS_ESCAPES:
                    out.append(_CLASS_ESCAPES[nxt])
                elif nxt == "b":
                    out.append("\\x08")
                elif nxt in "DWS" or nxt in _PASS_THROUGH or not nxt.isalnum():
                    out.append("\\" + nxt)
                else:
                    out.append(re.escape(nxt))
                continue
            if unicode and nxt in "pP" and i < n and source[i] == "{":
                end = source.find("}", i)
                if end < 0:
                    raise ValueError("unterminated property")
                out.append(f"\\{nxt}{source[i : end + 1]}")
                i = end + 1
            elif unicode and nxt == "u" and i < n and source[i] == "{":
                end = source.find("}", i)
                if end < 0:
                    raise ValueError("unterminated code point")
                out.append(re.escape(chr(int(source[i + 1 : end], 16))))
                i = end + 1
            elif not unicode and nxt in "ux" and not _HEX[nxt].match(source, i):
                out.append(nxt)  # without `u`, `\u{...}` or a short `\x` is the letter
            elif nxt in _OUTSIDE_ESCAPES:
                out.append(_OUTSIDE_ESCAPES[nxt])
            elif nxt == "k" and i < n and source[i] == "<":
                end = source.find(">", i)
                if end < 0:
                    raise ValueError("unterminated group name")
                out.append(f"(?P={source[i + 1 : end]})")
                i = end + 1
            elif nxt in _PASS_THROUGH or not nxt.isalnum():
                out.append("\\" + nxt)
            else:  # JavaScript (without `u`) reads an unknown letter escape as the letter
                out.append(re.escape(nxt))
            continue
        if in_class:
            if char == "]":
                in_class = False
            elif char == "[":
                out.append("\\[")
                i += 1
                continue
            out.append(char)
            i += 1
            continue
        if char == "[":
            if source.startswith("[^]", i):
                out.append("[\\s\\S]")
                i += 3
                continue
            if source.startswith("[]", i):
                out.append("(?!)")
                i += 2
                continue
            in_class = True
            out.append(char)
            i += 1
            if i < n and source[i] == "^":
                out.append("^")
                i += 1
            if i < n and source[i] == "]":  # a leading ] is literal in Python only
                raise ValueError("empty class")
            continue
        if char == ".":
            out.append("[\\s\\S]" if dotall else f"[^{_LINE_END}]")
        elif char == "$":
            out.append(f"(?=[{_LINE_END}]|\\Z)" if multiline else "\\Z")
        elif char == "^":
            out.append(f"(?:^|(?<=[{_LINE_END}]))" if multiline else "^")
        else:
            out.append(char)
        i += 1
    if in_class:
        raise ValueError("unterminated class")
    return "".join(out)


def compile_js_regex(source: str, flags: str) -> JsRegex | None:
    """A JavaScript pattern and flags as a safe Python regex; None if JavaScript would reject it."""
    if len(set(flags)) != len(flags) or set(flags) - set("gimsuy"):
        return None
    try:
        python = _translate(source, flags)
        compiled = regex.compile(python, (regex.IGNORECASE if "i" in flags else 0) | regex.VERSION0)
    except (ValueError, OverflowError, regex.error, IndexError):
        return None
    return JsRegex(source=source, flags=flags, pattern=compiled, sticky="y" in flags)


def parse_regex_key(key: str) -> JsRegex | None:
    """The regex a key stands for, or None when it is a plain key (algo-world-info.md §3.1).

    A key is a regex when it reads `/body/flags` with flags from `gimsuy` and no
    unescaped `/` inside the body; the first `\\/` is unescaped. A body JavaScript
    cannot compile makes the key plain text again.
    """
    shape = _KEY_SHAPE.fullmatch(key)
    if not shape:
        return None
    body, flags = shape.group(1), shape.group(2)
    if _UNESCAPED_SLASH.search(body):
        return None
    return compile_js_regex(body.replace("\\/", "/", 1), flags)
