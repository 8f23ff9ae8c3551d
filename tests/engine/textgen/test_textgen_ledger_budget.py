"""A Text Completion prompt's ledger says what its text holds: a message the budget cannot
hold is cut with every older one (SillyTavern fills the history newest to oldest and stops
at the first message that does not fit), and a message the turn's tokenizer counts as
fitting is sent and shown as included. The count that decides is the Text Completion
tokenizer's, which may differ widely from a Chat Completion model's for the same text."""

from __future__ import annotations

from dataclasses import replace

import pytest

from taverna.engine.assemble import assemble, tokenizer_name
from taverna.engine.assembly.context import AssemblyContext, Speaker
from taverna.engine.tokens import get_tokenizer
from taverna.model.prompt import Prompt

from .test_textgen_prompt import message, seraphina

FOG = "雾很浓，灯塔的光一圈圈扫过海面。"


def _chat(long_text: str, at: int = 25, count: int = 30) -> AssemblyContext:
    messages = tuple(
        message(
            i,
            Speaker.USER if i % 2 else Speaker.CHARACTER,
            "Alex" if i % 2 else "Seraphina",
            long_text if i == at else f"第{i}段：海浪拍岸。",
        )
        for i in range(count)
    )
    context = seraphina(messages=messages)
    # SillyTavern's defaults: 8192 tokens of context, 350 of them for the reply
    text = replace(context.text_completion, max_context=8192, amount_gen=350)
    return replace(context, text_completion=text)


def _history(prompt: Prompt) -> list[tuple[str, bool, str]]:
    return [(i.source, i.included, i.text) for i in prompt.ledger.items if i.kind == "history"]


def _agrees_with_the_text(prompt: Prompt) -> None:
    """Every included line's text is in the prompt, in order; the budget holds."""
    at = 0
    for item in prompt.ledger.items:
        if item.included and item.text:
            found = prompt.text.find(item.text, at)
            assert found >= 0, item
            at = found + len(item.text)
    assert prompt.ledger.total_tokens < prompt.ledger.budget


def test_a_message_over_the_budget_is_cut_with_every_older_one() -> None:
    context = _chat(FOG * 1700)
    counter = get_tokenizer(tokenizer_name(context))
    assert counter.count(FOG * 1700) > 8192 - 350
    prompt = assemble(context)
    assert FOG not in prompt.text
    lines = _history(prompt)
    sent = [source for source, included, _ in lines if included]
    # the four newest messages, and nothing older than the long one
    assert sent == ["26", "27", "28", "29"]
    [cut] = [item for item in prompt.ledger.items if not item.included]
    assert cut.code == "older_not_sent"
    assert dict(cut.params) == {"why": "context_full", "n": 26}
    assert cut.source == "0..25"
    assert prompt.ledger.history_stopped
    _agrees_with_the_text(prompt)


@pytest.mark.parametrize("tokenizer", ["", "cl100k_base"])
def test_the_text_completion_tokenizers_count_decides(tokenizer: str) -> None:
    """400 times the line: about 10,000 tokens for cl100k (a Chat Completion model's), far
    fewer for the Text Completion default, which SillyTavern's estimate stands in for; the
    ledger follows whichever count the turn uses, as the prompt does."""
    context = replace(_chat(FOG * 400), tokenizer=tokenizer)
    count = get_tokenizer(tokenizer_name(context)).count(FOG * 400)
    prompt = assemble(context)
    lines = _history(prompt)
    sent_long = [source for source, included, text in lines if included and FOG in text]
    if count < 8192 - 350 - 500:
        assert sent_long == ["25"] and FOG * 400 in prompt.text
        assert all(included for _, included, _ in lines)
        assert not prompt.ledger.history_stopped
    else:
        assert count >= 10_000
        assert not sent_long and FOG not in prompt.text
        assert [s for s, included, _ in lines if included] == ["26", "27", "28", "29"]
        [cut] = [line for line in lines if not line[1]]
        assert cut[0] == "0..25" and FOG in cut[2]
        assert prompt.ledger.history_stopped
    _agrees_with_the_text(prompt)
