"""One turn's recall: the ranking made once, cut to each window the turn tries, searched in
memory or by the database, keeping only the hits on the active path.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from taverna.engine.assembly.recall import RecalledMessage, RecallInput
from taverna.services.memory.recall.caches import RecallCaches
from taverna.services.memory.recall.chat_vectors import ChatBits, ChatVectors
from taverna.services.memory.recall.config import RecallConfig
from taverna.services.memory.recall.path_index import PathIndex
from taverna.services.memory.recall.vectors import Vectors, single_threaded, to_bytes

# The database's search is first asked for this many rows per message wanted (a
# sibling's or a hidden message takes a place too), at least `STORE_SHORTLIST`.
STORE_SHORTLIST = 64
SHORTLIST_PER_WANTED = 8
# The longest shortlist asked for (sqlite-vec answers at most 4,096 rows a search).
STORE_SHORTLIST_MAX = 4096


@dataclass(slots=True)
class TurnRecall:
    """One turn's recall: the ranking made once, cut to each window the turn tries."""

    service: RecallCaches  # the recall service's caches: its store, lock and path index
    config: RecallConfig
    chat_id: str
    leaf: str | None
    model: str
    vectors: ChatVectors | None  # None: the store searches
    path: PathIndex | None
    query: Vectors
    entry_scores: dict[tuple[str, int], float]
    parents: dict[str, str | None] = field(default_factory=dict)  # the turn's own messages
    bits: ChatBits | None = None  # the chat's sign bits in memory, beside the store's search

    def entries_only(self) -> RecallInput:
        """The vectorized lorebook entries alone (no message recalled)."""
        return RecallInput(self.config.placement, (), dict(self.entry_scores))

    def for_window(self, first_depth: int) -> RecallInput:
        """The recall input for a turn whose window starts at depth `first_depth` (only
        messages above it can be recalled: those below are in the window)."""
        placement = self.config.placement
        messages: tuple[RecalledMessage, ...] = ()
        if self.path is not None and placement.insert > 0:
            # Another turn (of this chat, on another branch perhaps) may have moved the
            # shared path index or read new vectors since: set it to this turn's end again.
            with self.service.lock, single_threaded():
                self.path = self.service.path(self.chat_id, self.leaf, self.parents)
                messages = self._messages(first_depth, placement.insert * 3)
        return RecallInput(placement, messages, dict(self.entry_scores))

    def _messages(self, below: int, want: int) -> tuple[RecalledMessage, ...]:
        assert self.path is not None
        store = self.service.store
        vectors = self.vectors
        picked: list[RecalledMessage] = []
        hits: list[tuple[str, float]] = []

        def check() -> None:
            # Hidden or deleted as stored now, and the text: one read for a group of hits.
            nodes = {n.id: n for n in store.get_nodes(self.chat_id, [h[0] for h in hits])}
            for node_id, score in hits:
                node = nodes.get(node_id)
                if node is None or node.hidden or node.deleted or len(picked) >= want:
                    continue
                picked.append(RecalledMessage(node_id, node.speaker, node.content, score))
            hits.clear()

        if vectors is None:
            return self._store_messages(below, want)
        for row, score in vectors.ranked(self.query, below):
            node_id = vectors.ids[row]
            if not self.path.holds(node_id, int(vectors.depths[row])):
                continue  # a sibling branch's message, or a stale row
            hits.append((node_id, score))
            if len(hits) >= want - len(picked):
                check()
                if len(picked) >= want:
                    break
        if hits:
            check()
        out = picked
        return tuple(out)

    def _store_messages(self, below: int, want: int) -> tuple[RecalledMessage, ...]:
        """The store's search: a shortlist, made four times longer while too few of it are
        on the path, visible and live (and more rows are there to offer)."""
        assert self.path is not None
        store = self.service.store
        query = to_bytes(self.query)
        shortlist = max(STORE_SHORTLIST, want * SHORTLIST_PER_WANTED)
        while True:
            found = (
                self.bits.nearest(store, self.query, below_depth=below, shortlist=shortlist)
                if self.bits is not None
                else store.nearest_messages(
                    self.chat_id, self.model, query, below_depth=below, shortlist=shortlist
                )
            )
            if found is None:
                return ()
            near, complete = found
            on_path = [h for h in near if self.path.holds(h.node_id, h.depth)]
            picked: list[RecalledMessage] = []
            # Hidden or deleted as stored now, and the text: read a few hits at a time.
            for start in range(0, len(on_path), want):
                group = on_path[start : start + want]
                nodes = {n.id: n for n in store.get_nodes(self.chat_id, [h.node_id for h in group])}
                for hit in group:
                    node = nodes.get(hit.node_id)
                    if node is None or node.hidden or node.deleted:
                        continue
                    picked.append(
                        RecalledMessage(hit.node_id, node.speaker, node.content, hit.score)
                    )
                    if len(picked) >= want:
                        return tuple(picked)
            if complete or shortlist >= STORE_SHORTLIST_MAX:
                return tuple(picked)
            shortlist = min(shortlist * 4, STORE_SHORTLIST_MAX)
