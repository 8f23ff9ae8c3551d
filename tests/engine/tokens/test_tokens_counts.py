"""Tokenizers count as the model families do, offline (algo-prompt-assembly.md §3.7, §6.5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from taverna.engine.tokens import (
    CountCache,
    EstimateTokenizer,
    MessageCounter,
    TokenCounter,
    chat_completion_model,
    chat_completion_tokenizer,
    claude_transcript,
    get_tokenizer,
    js_length,
)
from taverna.engine.tokens.bpe import OpenAITokenizer


def test_cl100k_gives_openais_ids() -> None:
    # The example from tiktoken's own documentation.
    assert OpenAITokenizer("cl100k_base").encode("tiktoken is great!") == [
        83,
        1609,
        5963,
        374,
        2294,
        0,
    ]


def test_o200k_differs_from_cl100k_where_the_vocabularies_differ() -> None:
    text = "Привет, как дела? これは日本語の文章です。"
    assert get_tokenizer("o200k_base").count(text) < get_tokenizer("cl100k_base").count(text)


def test_special_token_text_counts_as_plain_text_for_openai() -> None:
    assert get_tokenizer("cl100k_base").count("<|endoftext|>") > 1


def test_llama3_counts_its_special_tokens_as_one() -> None:
    llama3 = get_tokenizer("llama3")
    assert llama3.exact
    assert llama3.count("<|eot_id|>") == 1
    assert llama3.count("<|start_header_id|>user<|end_header_id|>") == 3


def test_mistral_sentencepiece_counts_without_bos() -> None:
    assert get_tokenizer("mistral").count("Hello world") == 2


def test_nemo_tekken_is_its_own_vocabulary() -> None:
    nemo = get_tokenizer("nemo")
    assert nemo.exact and nemo.count("Hello world") == 2


def test_unshipped_families_fall_back_to_the_estimate() -> None:
    for name in ("gemma", "llama", "yi", "jamba", "no-such-tokenizer"):
        tokenizer = get_tokenizer(name)
        assert not tokenizer.exact
        assert tokenizer.count("abcdefg") == 3  # ceil(7 / 3.35)


def test_qwen_and_command_r_use_llama3_like_offline_sillytavern() -> None:
    qwen = get_tokenizer("qwen2")
    assert not qwen.exact and qwen.name == "qwen2"
    assert qwen.count("Hello there, friend") == get_tokenizer("llama3").count("Hello there, friend")


def test_estimate_counts_utf16_code_units_like_javascript() -> None:
    # algo-prompt-assembly.md §6.5: "None / Estimated" = ceil(length / 3.35), browser length.
    assert js_length("😀") == 2
    assert EstimateTokenizer().count("😀😀") == 2  # ceil(4 / 3.35)
    assert EstimateTokenizer().count("a" * 67) == 20
    assert EstimateTokenizer().count("a" * 68) == 21
    assert EstimateTokenizer().count("") == 0


def test_cache_counts_each_text_once_and_stays_bounded() -> None:
    cache = CountCache(max_entries=3)
    counter = TokenCounter(get_tokenizer("cl100k_base"), cache)
    assert counter.count("one two") == counter.count("one two") == 2
    assert (cache.hits, cache.misses) == (1, 1)
    for text in ("a", "b", "c", "d"):
        counter.count(text)
    assert len(cache) == 3
    counter.count("one two")  # evicted: counted again
    assert cache.misses == 6


def test_cache_keys_by_tokenizer() -> None:
    cache = CountCache()
    text = "Привет, как дела?"
    a = cache.count(get_tokenizer("cl100k_base"), text)
    b = cache.count(get_tokenizer("o200k_base"), text)
    assert a != b and len(cache) == 2


def _oracle_token_cases(oracle_cases: Path) -> list[Path]:
    cases = []
    for case in sorted(oracle_cases.iterdir()):
        meta = json.loads((case / "meta.json").read_text())
        if meta.get("token_counts"):
            cases.append(case)
    return cases


def test_per_message_counts_equal_sillytaverns(oracle_cases: Path) -> None:
    """Every oracle case: the per-message and one-call counts SillyTavern recorded (§3.7)."""
    cases = _oracle_token_cases(oracle_cases)
    assert cases
    for case in cases:
        meta = json.loads((case / "meta.json").read_text())
        settings = meta["tokenizer"]
        source = settings["chat_completion_source"]
        model = settings["tokenizer_model_for_chat_completion"]
        counter = MessageCounter(chat_completion_tokenizer(source, model), model)
        messages = json.loads((case / "expected.json").read_text())["messages"]
        recorded = meta["token_counts"]
        mine = [counter.server_count([m]) for m in messages]
        assert mine == recorded["per_message_single_call"], case.name
        assert counter.server_count(messages) == recorded["all_messages_one_call"], case.name


def test_client_count_adjustments() -> None:
    # tokenizers.js countTokensOpenAI: start at -1, take 2 off unless "full".
    counter = MessageCounter("cl100k_base", "gpt-4-turbo")
    message = {"role": "user", "content": "Hello!"}
    server = counter.server_count([message])
    assert server == 3 + 1 + 2 + 3
    assert counter.message(message) == server - 3
    assert counter.message(message, full=True) == server - 1
    assert counter.messages([message, message]) == 2 * server - 3


def test_names_cost_one_more_token_than_their_text() -> None:
    counter = MessageCounter("cl100k_base")
    plain = counter.server_count([{"role": "system", "content": "Hi"}])
    named = counter.server_count([{"role": "system", "content": "Hi", "name": "example_user"}])
    assert named - plain == counter.text("example_user") + 1


def test_gpt35_0301_has_its_own_overhead() -> None:
    counter = MessageCounter("cl100k_base", "gpt-3.5-turbo-0301")
    assert counter.server_count([{"role": "user", "content": "Hi"}]) == 4 + 1 + 1 + 3 + 9


def test_claude_counts_full_and_as_a_human_turn() -> None:
    counter = MessageCounter("claude", "claude")
    message = {"role": "assistant", "content": "Hello there"}
    assert counter.server_count([message]) == counter.text("\n\nHuman: Hello there")
    assert counter.message(message) == counter.server_count([message]) - 1


def test_claude_transcript_follows_the_legacy_conversion() -> None:
    messages = [
        {"role": "system", "content": "S"},
        {"role": "system", "content": "ex", "name": "example_user"},
        {"role": "system", "content": "ey", "name": "example_assistant"},
        {"role": "user", "content": "U", "name": "Alex"},
        {"role": "assistant", "content": "A"},
    ]
    assert claude_transcript(messages) == (
        "\n\nHuman: S\n\nH: ex\n\nA: ey\n\nFirst message: Alex: U\n\nAssistant: A"
    )


def test_joined_family_joins_every_value() -> None:
    counter = MessageCounter("mistral")
    message = {"role": "user", "content": "Hello world"}
    assert counter.server_count([message]) == counter.text("user\n\nHello world")


def test_chat_completion_selection_follows_sillytavern() -> None:
    assert chat_completion_tokenizer("openai", "gpt-4-turbo") == "cl100k_base"
    assert chat_completion_tokenizer("openai", "gpt-4o-mini") == "o200k_base"
    assert chat_completion_tokenizer("openai", "o1-mini") == "o200k_base"
    assert chat_completion_tokenizer("claude", "claude-3-5-sonnet-20240620") == "claude"
    assert chat_completion_tokenizer("mistralai", "open-mistral-nemo") == "nemo"
    assert chat_completion_tokenizer("mistralai", "mistral-large-latest") == "mistral"
    assert chat_completion_tokenizer("makersuite", "gemini-1.5-pro") == "gemma"
    assert chat_completion_tokenizer("groq", "llama3-70b-8192") == "llama3"
    assert chat_completion_tokenizer("cohere", "command-r-plus") == "command-r"
    assert chat_completion_tokenizer("custom", "some-local-model") == "cl100k_base"
    assert chat_completion_model("scale", "") == "gpt-4"


def test_works_with_the_network_unreachable(tmp_path: Path) -> None:
    """Every shipped tokenizer loads with no network and downloads nothing."""
    cache_dir = tmp_path / "tiktoken-cache"
    cache_dir.mkdir()
    script = (
        "import socket\n"
        "def refuse(*a, **k):\n"
        "    raise OSError('network is off in this test')\n"
        "socket.socket.connect = refuse\n"
        "socket.getaddrinfo = refuse\n"
        "socket.create_connection = refuse\n"
        "from taverna.engine.tokens import get_tokenizer\n"
        "for name in ('cl100k_base', 'o200k_base', 'llama3', 'mistral', 'nemo', 'claude'):\n"
        "    tokenizer = get_tokenizer(name)\n"
        "    assert tokenizer.count('Hello, world!') > 0, name\n"
        "print('ok')\n"
    )
    env = dict(os.environ, TIKTOKEN_CACHE_DIR=str(cache_dir), HF_HUB_OFFLINE="1")
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    assert list(cache_dir.iterdir()) == []


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "llama3", "mistral", "claude"])
def test_counts_are_additive_enough_for_budgeting(name: str) -> None:
    # A sanity bound that catches a tokenizer counting characters or words.
    text = "The quick brown fox jumps over the lazy dog. " * 20
    count = get_tokenizer(name).count(text)
    assert 150 <= count <= 260, count


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "llama3"])
def test_long_texts_counted_by_lines_give_the_whole_count(name: str) -> None:
    import random

    rng = random.Random(7)
    alphabet = [*"abc XYZ\n\t.,!?'\"<|>:/-_019éü中😀\\", "<|eot_id|>", "'s", "\r\n", "\n\n", "\n/"]
    tokenizer = get_tokenizer(name)
    for _ in range(40):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(2100, 4000)))
        cache = CountCache()
        assert cache.count(tokenizer, text) == tokenizer.count(text)
        assert len(cache) > 1  # it was counted in pieces


def test_user_supplied_vocabularies() -> None:
    """A model's own files (e.g. Gemma's, which no package ships) count exactly when given."""
    from taverna.engine.tokens import HFTokenizer, SentencePieceTokenizer
    from taverna.engine.tokens.bpe import package_file
    from taverna.errors import FormatError

    data = package_file("mistral_common", "data/tokenizer.model.v1").read_bytes()
    own = SentencePieceTokenizer.from_model_bytes("my-model", data)
    assert own.exact and own.count("Hello world") == get_tokenizer("mistral").count("Hello world")
    with pytest.raises(FormatError):
        SentencePieceTokenizer.from_model_bytes("broken", b"not a model", file="tokenizer.model")
    with pytest.raises(FormatError):
        HFTokenizer.from_json("broken", "{}", file="tokenizer.json")
    claude_json = package_file("taverna", "engine/tokens/data/claude.json").read_text()
    hf = HFTokenizer.from_json("claude-file", claude_json)
    assert hf.count("Hello there") == get_tokenizer("claude").count("Hello there")
