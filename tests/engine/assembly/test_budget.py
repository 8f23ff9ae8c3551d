"""Per-message token costs as SillyTavern counts them (algo-prompt-assembly.md §3.7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taverna.engine.assembly.budget import MessageCost
from taverna.engine.tokens.registry import get_tokenizer
from taverna.engine.tokens.selection import message_family, model_family

from .helpers import word_count


def test_tiktoken_overhead_section_3_7() -> None:
    """§3.7: role + content + 3 (+ name + 1) once the client's -3 is applied."""
    cost = MessageCost(word_count)
    assert cost.message("system", "a b c") == 1 + 3 + 3
    assert cost.message("system", "a b c", "example_user") == 1 + 3 + 3 + 1 + 1
    assert cost.message("user", "") == 0
    assert cost.text("a b c") == 3 + 1 + 3 + 3 - 1  # "full": only the -1


def test_other_message_rules_section_3_7() -> None:
    """§3.7: 0301's 4/-1, the transcript of Claude-family tokenizers, joined SentencePiece values."""
    assert (
        MessageCost(word_count, "tiktoken-0301").message("user", "a b", "n")
        == 4 + 1 + 2 + 3 + 1 - 1 - 3
    )
    assert MessageCost(word_count, "transcript", True).message("system", "a b") == 3 - 1
    assert MessageCost(word_count, "joined").message("user", "a b") == 3 - 3


def test_counts_are_cached() -> None:
    calls: list[str] = []

    def counting(text: str) -> int:
        calls.append(text)
        return len(text)

    cost = MessageCost(counting)
    cost.message("user", "hello")
    cost.message("user", "hello")
    assert calls.count("hello") == 1


def _cases(oracle_cases: Path) -> list[Path]:
    return sorted(p for p in oracle_cases.iterdir() if (p / "meta.json").exists())


def test_per_message_counts_equal_sillytavern_s(oracle_cases: Path) -> None:
    """Each oracle case's recorded per-message server counts, recomputed (meta.json)."""
    checked = 0
    for case in _cases(oracle_cases):
        meta = json.loads((case / "meta.json").read_text())
        counts = (meta.get("token_counts") or {}).get("per_message_single_call")
        endpoint = (meta.get("token_counts") or {}).get("endpoint", "")
        if not counts or "model=" not in endpoint:
            continue
        model = endpoint.split("model=", 1)[1]
        name = model_family(model)
        cost = MessageCost(get_tokenizer(name).count, message_family(name, model), name == "claude")
        full = name == "claude"
        expected = json.loads((case / "expected.json").read_text())
        for message, server in zip(expected["messages"], counts, strict=True):
            content = message["content"]
            if not isinstance(content, str):
                pytest.fail(f"{case.name}: non-text content")
            client = cost.message(message["role"], content, message.get("name", ""))
            # The recorded figure is the server's; the client takes 1 (full) or 3 off.
            assert client + (1 if full else 3) == server, (case.name, message)
            checked += 1
    assert checked > 0


def test_shared_cost_gives_the_same_prompt_as_a_fresh_one() -> None:
    """Work kept across turns (counts, parts, scan views) never changes the result."""
    from dataclasses import replace

    from taverna.engine.assemble import assemble

    from .helpers import chat, context, msg

    turns = [
        (("user", "character")[i % 2], f"line {i} about {{{{char}}}}" if i % 3 else f"line {i}")
        for i in range(30)
    ]
    ctx = context(messages=chat(*turns), cc={"max_context": 200, "max_tokens": 20})
    shared = MessageCost(word_count)
    for step in range(5):
        ctx = replace(
            ctx, messages=(*ctx.messages, msg(100 + step, "user", f"new {step} {{{{user}}}}"))
        )
        warm = assemble(ctx, cost=shared)
        cold = assemble(ctx, cost=MessageCost(word_count))
        assert warm.messages == cold.messages
        assert warm.ledger == cold.ledger
