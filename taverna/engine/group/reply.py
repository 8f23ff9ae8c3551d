"""A group reply cut where the model starts writing another member's line."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["cut_at_other_speaker"]


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
