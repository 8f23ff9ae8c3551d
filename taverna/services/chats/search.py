"""Search in a chat and across chats: the messages holding every word of a query.

The store finds the messages (its full-text index, see `taverna.store.sql.search`);
this service checks the query, tells for each hit whether it is on its chat's active
path, and cuts a snippet around the first match with every match marked. Opening a hit
on another branch is `ChatService.select_candidate`: the path then goes through it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from taverna.errors import TavernaError
from taverna.model.search_text import fold_with_places, search_terms
from taverna.store import Store
from taverna.store.repository import MessageHit

MAX_QUERY = 200
MAX_TERMS = 8
MAX_RESULTS = 200
# How much text a snippet shows around its first match (characters of the message).
_BEFORE = 40
_AFTER = 100
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class SearchResult:
    """A message found: where it is, who said it, whether it is on its chat's active
    path, and a snippet as pieces, each marked when it is a match."""

    chat_id: str
    chat_title: str
    node_id: str
    parent_id: str | None
    role: str
    speaker: str
    position: int
    hidden: bool
    on_path: bool
    snippet: tuple[tuple[str, bool], ...]


def snippet(text: str, terms: list[str]) -> tuple[tuple[str, bool], ...]:
    """The part of `text` around its first match, as (piece, is a match) pairs; an ellipsis
    marks a cut. Matches are found as the search finds them (case and accents folded)."""
    folded, places = fold_with_places(text)
    spans: list[tuple[int, int]] = []
    for term in terms:
        start = folded.find(term)
        while start >= 0:
            end = start + len(term)
            spans.append((places[start], places[end - 1] + 1))
            start = folded.find(term, end)
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    first = merged[0][0] if merged else 0
    low = max(0, first - _BEFORE)
    high = min(len(text), first + _AFTER)
    pieces: list[tuple[str, bool]] = []
    at = low
    for start, end in merged:
        if end <= low or start >= high:
            continue
        start, end = max(start, low), min(end, high)
        if start > at:
            pieces.append((text[at:start], False))
        pieces.append((text[start:end], True))
        at = end
    if at < high:
        pieces.append((text[at:high], False))
    if low > 0:
        pieces.insert(0, ("…", False))
    if high < len(text):
        pieces.append(("…", False))
    # Line breaks and runs of spaces read as one space in a one-line snippet.
    return tuple((_SPACES.sub(" ", piece), match) for piece, match in pieces)


class SearchService:
    """Message search over one person's chats."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def search(
        self, query: str, *, owner: str = "", chat_id: str | None = None, limit: int = 50
    ) -> list[SearchResult]:
        """The newest messages (of every live chat of `owner`, or of chat `chat_id`) whose
        text holds every word of `query`, case and accents aside; deleted ones never."""
        if len(query) > MAX_QUERY:
            raise TavernaError(
                f"a search is at most {MAX_QUERY} characters",
                field="q",
                code="search_too_long",
                params={"max_query": str(MAX_QUERY)},
            )
        # A U+0000 in a query separates words, as a space does: SQLite's full-text
        # query cannot hold one.
        terms = search_terms(query.replace("\x00", " "))
        if not terms:
            raise TavernaError("type a word to search for", field="q", code="search_empty")
        if len(terms) > MAX_TERMS:
            raise TavernaError(
                f"search for at most {MAX_TERMS} words at once",
                field="q",
                code="search_too_many_words",
                params={"max_terms": str(MAX_TERMS)},
            )
        if chat_id is not None:
            self.store.get_chat(chat_id)  # NotFound for a chat that is not there
        hits = self.store.search_messages(
            terms, owner=owner, chat_id=chat_id, limit=max(1, min(limit, MAX_RESULTS))
        )
        on_path = self._on_path(hits)
        return [
            SearchResult(
                chat_id=hit.chat_id,
                chat_title=hit.chat_title,
                node_id=hit.node_id,
                parent_id=hit.parent_id,
                role=hit.role,
                speaker=hit.speaker,
                position=hit.depth,
                hidden=hit.hidden,
                on_path=hit.node_id in on_path,
                snippet=snippet(hit.text, terms),
            )
            for hit in hits
        ]

    def _on_path(self, hits: list[MessageHit]) -> set[str]:
        """Those of the hits' messages that are on their chat's active path: one climb
        from each chat's active leaf, as far up as its highest hit."""
        by_chat: dict[str, list[MessageHit]] = defaultdict(list)
        for hit in hits:
            if hit.active_leaf_id:
                by_chat[hit.chat_id].append(hit)
        found: set[str] = set()
        for chat_id, chat_hits in by_chat.items():
            leaf = chat_hits[0].active_leaf_id
            assert leaf is not None
            top = self.store.climb(chat_id, leaf, limit=1)
            if not top:
                continue
            leaf_depth = top[0][1]
            highest = min(hit.depth for hit in chat_hits)
            if highest > leaf_depth:
                continue
            path = {
                node_id
                for node_id, _ in self.store.climb(chat_id, leaf, limit=leaf_depth - highest + 1)
            }
            found.update(hit.node_id for hit in chat_hits if hit.node_id in path)
        return found
