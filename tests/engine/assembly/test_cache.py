"""Where a prompt stops sharing its prefix with the previous turn's (beyond SillyTavern)."""

from __future__ import annotations

from dataclasses import replace

from taverna.engine.assembly.cache import first_difference
from taverna.engine.assembly.layouts import CACHE
from taverna.engine.assembly.ledger import render_ledger
from taverna.model.character import DepthPrompt
from taverna.model.prompt import Ledger, LedgerItem, Prompt

from .helpers import SERAPHINA, build, chat, context, msg


def test_identical_prompts() -> None:
    prompt = build(context())
    assert first_difference(prompt, prompt).identical


def test_a_new_message_breaks_at_the_end() -> None:
    before = build(context())
    ctx = context()
    after = build(replace(ctx, messages=(*ctx.messages, msg(2, "character", "Welcome."))))
    found = first_difference(before, after)
    assert not found.identical
    assert found.message == len(before.messages)
    assert found.cause is not None and found.cause.kind == "history"


def test_a_depth_injection_breaks_the_prefix_and_is_named() -> None:
    """A depth-4 note moves every turn: the break is at the injection, inside the history."""
    turns = [(("user", "character")[i % 2], f"line {i}") for i in range(10)]
    character = replace(SERAPHINA, depth_prompt=DepthPrompt(prompt="NOTE", depth=4, role="system"))
    before = build(context(messages=chat(*turns), character=character))
    after = build(context(messages=chat(*turns, ("user", "line 10")), character=character))
    found = first_difference(before, after)
    assert found.cause is not None and found.cause.kind in ("injection", "history")
    friendly_before = build(
        replace(context(messages=chat(*turns), character=character), layout=CACHE)
    )
    friendly_after = build(
        replace(
            context(messages=chat(*turns, ("user", "line 10")), character=character),
            layout=CACHE,
        )
    )
    later = first_difference(friendly_before, friendly_after)
    assert later.shared > found.shared


def test_text_prompts_name_the_piece() -> None:
    items = (
        LedgerItem("story", "story", 3, text="Hello ", position=0),
        LedgerItem("history", "7", 2, text="world", position=1),
    )
    a = Prompt(kind="text", text="Hello world", ledger=Ledger(items))
    b = Prompt(kind="text", text="Hello there", ledger=Ledger(items))
    found = first_difference(a, b)
    assert found.offset == 6 and found.cause is not None and found.cause.source == "7"


def test_readable_ledger_lists_parts_and_cuts() -> None:
    turns = [(("user", "character")[i % 2], f"message number {i} here") for i in range(40)]
    prompt = build(context(messages=chat(*turns), cc={"max_context": 250, "max_tokens": 50}))
    text = render_ledger(prompt)
    assert "cut (" in text and "newest to oldest" in text
    assert f"total {prompt.ledger.total_tokens} tokens of a budget of 200" in text
