"""Tokenizers and the Text Completion prompt: how fast, offline.

Part 1, per tokenizer: the time to load its vocabulary (first use in a process)
and the throughput on role-play English (tokens per second, cold: no cache).
Part 2: the Text Completion prompt for a 10,000-message chat at 32k context with
the ChatML instruct template, the Text Completion build alone (after the turn is
prepared) and the whole `assemble` call: cold (nothing cached) and warm (one new
message; the token-count cache is kept between turns as a service keeps it).
Medians of 15 warm turns.

Prints a table, then one line of JSON with the figures.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from taverna.engine.assemble import assemble
from taverna.engine.assembly.context import AssemblyContext, CharacterInfo, ChatMessage, Speaker
from taverna.engine.assembly.macros_bridge import substitute_for
from taverna.engine.assembly.turn import prepare_turn
from taverna.engine.textgen import build_text_completion
from taverna.engine.tokens import CountCache, TokenCounter, get_tokenizer
from taverna.model.presets import InstructTemplate
from taverna.model.settings import DEFAULT_CONTEXT_TEMPLATE, PersonaInfo, TextCompletionSettings

TOKENIZERS = ("estimate", "cl100k_base", "o200k_base", "llama3", "mistral", "nemo", "claude")
MESSAGES = 10_000
WARM_TURNS = 15

LINE = (
    "*She tilts her head, the lantern light catching the brass of her compass.* "
    '"The marsh keeps what it takes, {n}. Stay on the reeds I mark and you will see '
    'the lighthouse by the second evening." '
)

CHATML = InstructTemplate(
    input_sequence="<|im_start|>user",
    output_sequence="<|im_start|>assistant",
    system_sequence="<|im_start|>system",
    stop_sequence="<|im_end|>",
    input_suffix="<|im_end|>\n",
    output_suffix="<|im_end|>\n",
    system_suffix="<|im_end|>\n",
    names_behavior="always",
)


def tokenizer_rows() -> list[dict[str, float | str]]:
    text = "".join(LINE.format(n=n) for n in range(400))
    rows: list[dict[str, float | str]] = []
    for name in TOKENIZERS:
        started = time.perf_counter()
        tokenizer = get_tokenizer(name)
        tokenizer.count("warm up")
        load_ms = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        tokens = tokenizer.count(text)
        seconds = time.perf_counter() - started
        rows.append(
            {
                "tokenizer": name,
                "exact": str(tokenizer.exact),
                "load_ms": round(load_ms, 1),
                "tokens": tokens,
                "mtok_per_s": round(tokens / seconds / 1e6, 2),
            }
        )
    return rows


def chat(count: int) -> tuple[ChatMessage, ...]:
    out = []
    for i in range(count):
        user = i % 2 == 1
        out.append(
            ChatMessage(
                f"m{i}",
                Speaker.USER if user else Speaker.CHARACTER,
                "Alex" if user else "Aria",
                LINE.format(n=i),
            )
        )
    return tuple(out)


def context(messages: tuple[ChatMessage, ...], tokenizer: str) -> AssemblyContext:
    character = CharacterInfo(
        name="Aria",
        description="Aria is a wandering cartographer. " * 40,
        personality="patient, dry wit",
        scenario="A ferry house at the edge of the marsh.",
        mes_example="<START>\n{{user}}: Why maps?\n{{char}}: Because rivers lie.",
    )
    settings = TextCompletionSettings(
        instruct=CHATML,
        instruct_enabled=True,
        context=DEFAULT_CONTEXT_TEMPLATE.model_copy(update={"use_stop_strings": False}),
        max_context=32_768,
        amount_gen=512,
    )
    return AssemblyContext(
        characters=(character,),
        messages=messages,
        persona=PersonaInfo(name="Alex"),
        api="textgen",
        text_completion=settings,
        tokenizer=tokenizer,
    )


def turn_rows() -> list[dict[str, float | str]]:
    base = chat(MESSAGES)
    rows: list[dict[str, float | str]] = []
    for name in ("estimate", "llama3"):
        cache = CountCache()
        counter = TokenCounter(get_tokenizer(name), cache)
        first = context(base, name)
        started = time.perf_counter()
        turn = prepare_turn(first, substitute_for(first))
        build_text_completion(first, turn, counter.count)
        cold_build = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        assemble(first, count_text=counter.count)
        cold_assemble = (time.perf_counter() - started) * 1000
        builds: list[float] = []
        assembles: list[float] = []
        messages = base
        for k in range(WARM_TURNS):
            messages = (*messages, ChatMessage(f"n{k}", Speaker.USER, "Alex", f"And then? ({k})"))
            ctx = replace(first, messages=messages)
            turn = prepare_turn(ctx, substitute_for(ctx))
            started = time.perf_counter()
            prompt = build_text_completion(ctx, turn, counter.count)
            builds.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            assemble(ctx, count_text=counter.count)
            assembles.append((time.perf_counter() - started) * 1000)
        sent = sum(1 for item in prompt.ledger.items if item.kind == "history" and item.included)
        rows.append(
            {
                "tokenizer": name,
                "cold_build_ms": round(cold_build, 1),
                "warm_build_ms": round(statistics.median(builds), 1),
                "cold_assemble_ms": round(cold_assemble, 1),
                "warm_assemble_ms": round(statistics.median(assembles), 1),
                "messages_sent": sent,
                "prompt_tokens": prompt.ledger.total_tokens,
            }
        )
    return rows


def main() -> None:
    tokenizers = tokenizer_rows()
    print(f"{'tokenizer':<12} {'exact':<6} {'load ms':>9} {'tokens':>8} {'Mtok/s':>8}")
    for row in tokenizers:
        print(
            f"{row['tokenizer']:<12} {row['exact']:<6} {row['load_ms']:>9} "
            f"{row['tokens']:>8} {row['mtok_per_s']:>8}"
        )
    turns = turn_rows()
    print()
    print(f"Text Completion, {MESSAGES:,} messages, 32k context, ChatML (ms; warm = median)")
    print(
        f"{'tokenizer':<10} {'build cold':>11} {'build warm':>11} {'assemble cold':>14} "
        f"{'assemble warm':>14} {'sent':>6} {'tokens':>7}"
    )
    for row in turns:
        print(
            f"{row['tokenizer']:<10} {row['cold_build_ms']:>11} {row['warm_build_ms']:>11} "
            f"{row['cold_assemble_ms']:>14} {row['warm_assemble_ms']:>14} "
            f"{row['messages_sent']:>6} {row['prompt_tokens']:>7}"
        )
    print(json.dumps({"tokenizers": tokenizers, "text_completion": turns}))


if __name__ == "__main__":
    main()
