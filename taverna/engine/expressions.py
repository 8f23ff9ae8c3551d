"""Which expression a character wears after a reply: a small offline classifier of the
reply's emotion by keywords, in English and Chinese.

The labels are the 28 of SillyTavern's classifier (the GoEmotions set); a sprite pack names
its pictures by them (`joy.png`, `anger.png`, ...). Each label has a list of cue words
(`KEYWORDS`): an English cue is a word, or a word's beginning when it ends in `*`; a
Chinese cue is matched anywhere in the text; emoticons and emoji count as cues too. A cue
right after a negation ("not happy", "不开心") does not count. Each cue found scores one
point, half as much again in the reply's last third (how a reply ends is how the
character is left); the label with the most points wins, ties going to the one listed
first. No cue at all: `neutral`.

A character whose pack has no picture for the label shows the nearest one it has
(`sprite_for`): the label's broad family (`FAMILY`: amusement -> joy, annoyance ->
anger ...), then `neutral`.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from taverna.engine.expression_cues import FAMILY, KEYWORDS, LABELS

__all__ = ["FAMILY", "KEYWORDS", "LABELS", "Reading", "classify", "sprite_for"]

_NEGATIONS = frozenset({"not", "no", "never", "isn't", "wasn't", "don't", "didn't", "hardly"})
_ZH_NEGATIONS = "不没别未"
_WORD = re.compile(r"[a-z0-9']+(?:-[a-z0-9']+)*")
_LATE_WEIGHT = 1.5


@dataclass(frozen=True, slots=True)
class Reading:
    """The label a text is read as, with each label's points (only those that scored)."""

    label: str
    scores: Mapping[str, float]


def _cue_pattern(cue: str) -> re.Pattern[str]:
    """An English cue as a pattern: whole words, a word ending in `*` as its beginning."""
    if re.fullmatch(r"[a-z'*-]+(?: [a-z'*-]+)*", cue):
        words = [
            re.escape(word.rstrip("*")) + (r"[a-z'-]*" if word.endswith("*") else "")
            for word in cue.split(" ")
        ]
        return re.compile(r"(?<![a-z'])" + r"\s+".join(words) + r"(?![a-z'])")
    # an emoticon, an emoji or a cue with marks: as written, not inside a word
    lead = r"(?<![a-z'])" if cue[0].isalpha() else ""
    return re.compile(lead + re.escape(cue))


def _english_matchers() -> list[tuple[str, re.Pattern[str]]]:
    return [
        (label, _cue_pattern(cue))
        for label, (english, _chinese) in KEYWORDS.items()
        for cue in english
    ]


_ENGLISH = _english_matchers()
_CHINESE = [(label, cue) for label, (_english, zh) in KEYWORDS.items() for cue in zh]


def _negated_english(text: str, start: int) -> bool:
    before = _WORD.findall(text[max(0, start - 24) : start])
    return any(word in _NEGATIONS or word.endswith("n't") for word in before[-2:])


def classify(text: str) -> Reading:
    """The expression `text` reads as (see the module for how)."""
    lowered = text.lower()
    late = len(lowered) * 2 // 3
    scores: dict[str, float] = {}

    def score(label: str, at: int) -> None:
        scores[label] = scores.get(label, 0.0) + (_LATE_WEIGHT if at >= late else 1.0)

    for label, pattern in _ENGLISH:
        for match in pattern.finditer(lowered):
            if not _negated_english(lowered, match.start()):
                score(label, match.start())
    for label, cue in _CHINESE:
        at = lowered.find(cue)
        while at >= 0:
            if at == 0 or lowered[at - 1] not in _ZH_NEGATIONS:
                score(label, at)
            at = lowered.find(cue, at + len(cue))
    if not scores:
        return Reading("neutral", {})
    best = max(LABELS, key=lambda label: (scores.get(label, 0.0), -LABELS.index(label)))
    return Reading(best, scores)


def sprite_for(label: str, available: Collection[str]) -> str | None:
    """The sprite to show for `label` among those a pack has: its own, else its family's
    (following the family up), else `neutral`; None when the pack has none of them."""
    seen = set()
    current: str | None = label
    while current is not None and current not in seen:
        if current in available:
            return current
        seen.add(current)
        current = FAMILY.get(current)
    return "neutral" if "neutral" in available else None
