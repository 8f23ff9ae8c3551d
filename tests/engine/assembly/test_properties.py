"""Invariants of assembly over generated inputs (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from taverna.engine.assembly.injections import InjectedBlock, insert_blocks, newest_first
from taverna.model.injection import InjectionRole

from .helpers import build, chat, context

blocks_strategy = st.lists(
    st.builds(
        InjectedBlock,
        depth=st.integers(0, 12),
        role=st.sampled_from(list(InjectionRole)),
        text=st.text(min_size=1, max_size=3),
        sources=st.just(()),
    ),
    max_size=6,
).map(lambda bs: sorted(bs, key=lambda b: (b.depth, int(b.role))))


@given(st.integers(0, 10), blocks_strategy)
def test_lazy_merge_equals_splicing(size: int, blocks: list[InjectedBlock]) -> None:
    """Reading the history newest first gives exactly SillyTavern's splice order (§5.2)."""
    history = [f"m{i}" for i in range(size)]
    spliced = insert_blocks(history, blocks, lambda b: f"{b.depth}:{b.text}")
    lazy = list(newest_first(history, blocks, lambda b: f"{b.depth}:{b.text}"))
    assert lazy == list(reversed(spliced))
    assert [x for x in spliced if x in history] == history


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(1, 60), min_size=1, max_size=40),
    st.integers(120, 600),
)
def test_history_is_a_suffix_within_budget(lengths: list[int], context_size: int) -> None:
    """§3.5: the kept history is the newest messages without holes, and the prompt fits."""
    turns = [(("user", "character")[i % 2], " ".join(["w"] * n)) for i, n in enumerate(lengths)]
    messages = chat(*turns)
    prompt = build(context(messages=messages, cc={"max_context": context_size, "max_tokens": 50}))
    kept = [m.content for m in prompt.messages if m.role.value in ("user", "assistant")]
    texts = [m.text for m in messages]
    assert kept == texts[len(texts) - len(kept) :]
    if not any(i.kind == "error" for i in prompt.ledger.items):
        assert prompt.ledger.total_tokens <= context_size - 50
    included = [i for i in prompt.ledger.items if i.included and i.kind != "lorebook_entry"]
    assert sum(i.tokens for i in included) == prompt.ledger.total_tokens
