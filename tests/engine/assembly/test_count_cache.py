"""One long-lived, bounded token-count cache across turns and chats (`assemble(counts=...)`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from taverna.engine.assemble import assemble
from taverna.engine.tokens.cache import CountCache

from .helpers import chat, context


def _turns(count: int) -> list[tuple[str, str]]:
    return [(("user", "character")[i % 2], f"message number {i} of the chat") for i in range(count)]


def test_a_new_turn_counts_only_new_text() -> None:
    counts = CountCache()
    ctx = replace(context(messages=chat(*_turns(30))), tokenizer="cl100k")
    first = assemble(ctx, counts=counts)
    misses = counts.misses
    assert misses > 0 and len(counts) > 0
    again = assemble(replace(ctx, messages=chat(*_turns(31))), counts=counts)
    new = counts.misses - misses
    assert 0 < new <= 3  # the new message (and the few texts around it), nothing else
    assert counts.hits > 0
    fresh = assemble(replace(ctx, messages=chat(*_turns(31))))
    assert again.messages == fresh.messages and again.ledger == fresh.ledger
    assert first.ledger.total_tokens < again.ledger.total_tokens


def test_the_cache_is_bounded_and_changes_no_result() -> None:
    counts = CountCache(max_entries=8)
    for size in (10, 20, 30):
        ctx = replace(context(messages=chat(*_turns(size))), tokenizer="cl100k")
        assert assemble(ctx, counts=counts).ledger == assemble(ctx).ledger
        assert len(counts) <= 8


def test_text_completion_uses_it_too() -> None:
    counts = CountCache()
    ctx = replace(context(messages=chat(*_turns(12))), tokenizer="cl100k", api="textgen")
    assemble(ctx, counts=counts)
    before = counts.misses
    assemble(ctx, counts=counts)
    assert counts.misses == before


@dataclass(frozen=True)
class _Letters:
    """A tokenizer of one token per letter, or two (another vocabulary, same texts)."""

    name: str
    per_letter: int
    exact: bool = True

    def count(self, text: str) -> int:
        return self.per_letter * len(text)


def test_tokenizers_keep_their_own_counts_within_one_bound() -> None:
    one, two = _Letters("one", 1), _Letters("two", 2)
    counts = CountCache(max_entries=6)
    for i in range(5):
        assert counts.count(one, f"text {i}") == 6
        assert counts.count(two, f"text {i}") == 12
        assert len(counts) <= 6
    assert len(counts) == 6
    assert counts.known("one", "text 4") == 6 and counts.known("two", "text 4") == 12
    assert counts.known("one", "text 0") is None  # the least recently used went
    counts.remember("three", "text 9", 3)
    assert counts.known("three", "text 9") == 3 and len(counts) == 6
    hits = counts.hits
    assert counts.count(two, "text 4") == 12 and counts.hits == hits + 1
