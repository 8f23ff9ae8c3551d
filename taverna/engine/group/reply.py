"""A group reply as SillyTavern cleans it: cut where the model starts writing another
member's line, and without the speaker's own `Name:` at the start of its lines."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["clean_group_reply", "cut_at_other_speaker", "strip_own_name"]


def cut_at_other_speaker(text: str, speaker: str, members: Sequence[str]) -> str:
    """`text` up to the first line that starts with another member's `Name:`.

    algo-chat-ops.md §5.4: a reply is cut at the first `(^|\\n)Other:` of every other
    member; the speaker's own name does not cut.
    """
    cut = len(text)
    for name in members:
        if not name or name == speaker:
            continue
        marker = f"{name}:"
        if text.startswith(marker):
            return ""
        found = text.find("\n" + marker)
        if 0 <= found < cut:
            cut = found
    return text[:cut]


def strip_own_name(text: str, speaker: str) -> str:
    """`text` without the speaker's `Name:` (and the blanks after it) at the start of any
    line, as SillyTavern removes a character's own name from a reply when names are not
    shown in messages (its default); the line's break is kept."""
    if not speaker:
        return text
    return re.sub(rf"(^|\n){re.escape(speaker)}:\s*", r"\1", text)


def clean_group_reply(text: str, speaker: str, members: Sequence[str]) -> str:
    """A group member's reply as stored: cut at another member's line, the speaker's own
    name prefixes taken off, trimmed (empty when nothing of the speaker's is left)."""
    return strip_own_name(cut_at_other_speaker(text, speaker, members), speaker).strip()
