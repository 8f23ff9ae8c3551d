"""/fuzzy: which item of a list approximately occurs in a text (SillyTavern 1.12.6's rule).

An item "occurs" in a text when it can be turned into some stretch of the text with at most
`threshold` x its length edits (a letter changed, dropped or added), letters compared without
case. mode=first (the default) answers the first item of the list that occurs in the text;
mode=best answers the item the text matches best (fewest edits for its length, a text equal to
the item first, items of fewer words before items of more, then list order). Nothing found,
no text, no list or a list that is not a JSON list all answer an empty text.
"""

from __future__ import annotations

import math
import re

from taverna.engine.script.interpreter import Call, Command
from taverna.engine.script.scope import ClosureValue, ScriptValue
from taverna.engine.script.values import js_value_text, parse_json

DEFAULT_THRESHOLD = 0.4
CHUNK = 32  # longer patterns are scored in pieces of this many letters, as SillyTavern does
_FLOAT = re.compile(r"^[+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")


def edits_within(pattern: str, text: str) -> int:
    """The fewest edits that turn `pattern` into some stretch of `text` (possibly empty)."""
    previous = [0] * (len(text) + 1)  # matching nothing of the pattern costs nothing anywhere
    for row, letter in enumerate(pattern, start=1):
        current = [row]
        for column, other in enumerate(text, start=1):
            current.append(
                min(
                    previous[column - 1] + (letter != other),
                    previous[column] + 1,
                    current[column - 1] + 1,
                )
            )
        previous = current
    return min(previous)


def _chunks(pattern: str) -> list[str]:
    if len(pattern) <= CHUNK:
        return [pattern]
    whole = len(pattern) - len(pattern) % CHUNK
    pieces = [pattern[start : start + CHUNK] for start in range(0, whole, CHUNK)]
    if len(pattern) % CHUNK:
        pieces.append(pattern[len(pattern) - CHUNK :])
    return pieces


def match_score(pattern: str, text: str, threshold: float) -> float | None:
    """How well `pattern` occurs in `text`: 0 for equal texts, else at least 0.001 (edits per
    letter, averaged over the pieces of a long pattern); None when it does not occur."""
    pattern, text = pattern.lower(), text.lower()
    if pattern == text:
        return 0.0
    found = False
    total = 0.0
    pieces = _chunks(pattern)
    for piece in pieces:
        errors = edits_within(piece, text) if piece not in text else 0
        score = errors / len(piece) if piece else 0.0
        if errors < len(piece) and score <= threshold:
            found = True
            total += max(0.001, score)
        else:
            total += 1.0
    return total / len(pieces) if found else None


def _word_weight(item: str) -> float:
    words = len(item.split(" ")) - item.split(" ").count("")
    return round(1 / math.sqrt(max(words, 1)), 3)


def first_match(items: list[object], text: str, threshold: float) -> str:
    for item in items:
        if not isinstance(item, str):
            return ""  # SillyTavern stops with a warning on an item that is not a text
        if text.strip() and match_score(item, text, threshold) is not None:
            return item
    return ""


def best_match(items: list[object], text: str, threshold: float) -> str:
    if not items or not isinstance(items[0], str):
        return ""
    ranked: list[tuple[float, int, str]] = []
    for index, item in enumerate(items):
        if not isinstance(item, str) or not item.strip():
            continue
        score = match_score(text, item, threshold)
        if score is not None:
            ranked.append((score ** _word_weight(item), index, item))
    return min(ranked)[2] if ranked else ""


def _threshold(raw: str | None) -> float | None:
    if raw is None:
        return DEFAULT_THRESHOLD
    found = _FLOAT.match(raw.strip())
    if found is None:
        return None
    value = float(found.group(0).replace("Infinity", "inf"))
    return min(1.0, max(0.0, value))


def _list_text(call: Call, name: str) -> str:
    """The list argument, or the local then global variable it names (not a scoped one)."""
    for stored in (call.variables.local, call.variables.global_):
        if name in stored:
            value = stored[name]
            return value if isinstance(value, str) else js_value_text(value)
    return name


def fuzzy(call: Call) -> ScriptValue:
    text = call.text()
    listed = call.named.get("list")
    if not text or listed is None or isinstance(listed, ClosureValue) or not str(listed):
        return ""
    threshold = _threshold(call.arg("threshold"))
    if threshold is None:
        call.run.host.notify("threshold= must be a number from 0.0 to 1.0 for /fuzzy.", "warning")
        return ""
    items = parse_json(_list_text(call, str(listed)))
    if not isinstance(items, list):
        return ""
    if (call.arg("mode", "first") or "").strip().lower() == "best":
        return best_match(items, text, threshold)
    return first_match(items, text, threshold)


COMMANDS = (
    Command(
        "fuzzy",
        fuzzy,
        "The first item of list= that approximately occurs in the text (mode=best: the closest"
        " item); threshold= (0.4) is the share of an item's letters that may differ.",
        usage='/fuzzy list=["a","b"] [threshold=0.4] [mode=first|best] text',
    ),
)
