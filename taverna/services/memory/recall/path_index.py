"""The active path's node ids by depth, kept as the path's end moves: a hit counts only
when it is on the path, so a branch never recalls a sibling's messages.
"""

from __future__ import annotations

from collections.abc import Mapping

from taverna.services.kept_bytes import text_bytes
from taverna.store.repository import Store

# How far a path's end is climbed to find where it joins the path kept in memory: first
# a few rows (a turn's end is usually a message or two below the last), then four times
# more a climb, up to this many.
CLIMB_FIRST = 8
CLIMB_STEP = 256


class PathIndex:
    """The active path's node ids by depth, for one chat, kept as its end moves.

    A new end is climbed (a step of rows at a time) until it meets the path held; what is
    below that point is replaced. A new path that meets it nowhere is read whole.
    """

    def __init__(self, chat_id: str) -> None:
        self.chat_id = chat_id
        self.leaf: str | None = None
        self.ids: list[str] = []

    def follow(
        self, store: Store, leaf: str | None, parents: Mapping[str, str | None] = {}
    ) -> None:
        """Hold the path that ends at `leaf`. A turn's end may be a message not stored yet
        (the one being sent): `parents` (id -> parent id, from the turn's own messages)
        then leads to its nearest stored ancestor, which holds the same path above it."""
        if leaf == self.leaf:
            return
        while leaf is not None and leaf in parents and not store.climb(self.chat_id, leaf, limit=1):
            leaf = parents[leaf] or None
        if leaf == self.leaf:
            return
        if leaf is None:
            self.leaf, self.ids = None, []
            return
        if not self.ids:
            # A path new to this index: read whole in one climb.
            steps = store.climb(self.chat_id, leaf, limit=1 << 30)
            self.ids = [node_id for node_id, _ in sorted(steps, key=lambda s: s[1])]
            self.leaf = leaf
            return
        start: str = leaf
        climbed: list[tuple[str, int]] = []
        above: int | None = None  # the shallowest depth climbed so far
        joined = -1  # the depth where the new end meets the path held (-1: at no node)
        step = min(CLIMB_FIRST, CLIMB_STEP)
        while joined < 0:
            steps = store.climb(self.chat_id, start, limit=step)
            step = min(step * 4, CLIMB_STEP)
            if above is not None:
                steps = [s for s in steps if s[1] < above]
            if not steps:
                break
            for node_id, depth in steps:
                if depth < len(self.ids) and self.ids[depth] == node_id:
                    joined = depth
                    break
                climbed.append((node_id, depth))
            if steps[-1][1] == 0:
                break
            start, above = steps[-1]
        # Above the meeting point the path is the one held; below it, what was climbed.
        ids = self.ids[: joined + 1]
        ids.extend(node_id for node_id, _ in sorted(climbed, key=lambda s: s[1]))
        self.ids = ids
        self.leaf = leaf

    @property
    def nbytes(self) -> int:
        """About what the path's ids hold in memory."""
        return text_bytes(self.ids)

    def holds(self, node_id: str, depth: int) -> bool:
        return 0 <= depth < len(self.ids) and self.ids[depth] == node_id
