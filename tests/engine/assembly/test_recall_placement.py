"""The recalled block as assembly places it: the template, most relevant last, the
position and depth chosen, its own token budget, and a ledger line per message."""

from __future__ import annotations

import pytest

from taverna.engine.assemble import assemble
from taverna.engine.assembly.context import AssemblyContext, CharacterInfo, ChatMessage, Speaker
from taverna.engine.assembly.ledger import included_tokens, render_ledger
from taverna.engine.assembly.recall import (
    RECALLED_KIND,
    RecalledMessage,
    RecallInput,
    RecallSettings,
)
from taverna.model.injection import ExtensionPosition

MESSAGES = tuple(
    ChatMessage(
        f"m{i}",
        Speaker.USER if i % 2 == 0 else Speaker.CHARACTER,
        "Ann" if i % 2 == 0 else "Bo",
        f"line {i}",
    )
    for i in range(6)
)
RECALLED = (
    RecalledMessage("old1", "Bo", "The dragon\\nburned the mill.", 0.81),
    RecalledMessage("old2", "Ann", "We meet at the lighthouse.", 0.52),
    RecalledMessage("old3", "Bo", "A very long memory " * 40, 0.40),
)


def _context(api: str, settings: RecallSettings) -> AssemblyContext:
    return AssemblyContext(
        characters=(CharacterInfo(name="Bo"),),
        messages=MESSAGES,
        api=api,
        recall=RecallInput(settings, RECALLED),
    )


@pytest.mark.parametrize("api", ["openai", "textgen"])
def test_recalled_messages_go_in_at_depth_most_relevant_last(api: str) -> None:
    settings = RecallSettings(position=ExtensionPosition.IN_CHAT, depth=2, insert=2, budget=0)
    prompt = assemble(_context(api, settings))
    text = prompt.text if api == "textgen" else "\n".join(m.content for m in prompt.messages)
    block = "Past events:\nAnn: We meet at the lighthouse.\n\nBo: The dragon\\nburned the mill."
    assert block in text
    # Depth 2: after the two newest messages' predecessors, before "line 4".
    assert text.index(block) < text.index("line 4") and text.index("line 3") < text.index(block)
    lines = [i for i in prompt.ledger.items if i.kind == RECALLED_KIND]
    assert [(i.source, i.included) for i in lines] == [
        ("old2", True),
        ("old1", True),
        ("old3", False),
    ]
    assert lines[1].reason == "score 0.810"
    assert "past 2" in lines[2].reason
    # The recalled lines are notes beside the block: the block's own tokens are counted once.
    assert included_tokens(prompt.ledger) == prompt.ledger.total_tokens
    assert "recalled messages:" in render_ledger(prompt)


def test_the_budget_cuts_what_does_not_fit_and_says_so() -> None:
    settings = RecallSettings(insert=3, budget=40)
    prompt = assemble(_context("openai", settings))
    lines = {i.source: i for i in prompt.ledger.items if i.kind == RECALLED_KIND}
    assert lines["old1"].included and lines["old2"].included
    assert not lines["old3"].included
    assert "over the recall budget of 40 tokens" in lines["old3"].reason
    text = "\n".join(m.content for m in prompt.messages)
    assert "A very long memory" not in text and "Past events:" in text


def test_no_recall_no_block() -> None:
    prompt = assemble(_context("openai", RecallSettings(insert=0)))
    assert "Past events:" not in "\n".join(m.content for m in prompt.messages)


def test_messages_below_the_threshold_stay_out() -> None:
    settings = RecallSettings(insert=3, budget=0, score_threshold=0.6)
    prompt = assemble(_context("openai", settings))
    lines = {i.source: i for i in prompt.ledger.items if i.kind == RECALLED_KIND}
    assert lines["old1"].included
    assert not lines["old2"].included and "below the threshold of 0.6" in lines["old2"].reason
    assert "lighthouse" not in "\n".join(m.content for m in prompt.messages)
