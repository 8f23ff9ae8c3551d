"""Tokenizers by name: the real vocabulary where one ships offline, a stand-in otherwise."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from taverna.engine.tokens import gemma, llama_vocab
from taverna.engine.tokens.base import EstimateTokenizer, Tokenizer
from taverna.engine.tokens.bpe import Llama3Tokenizer, OpenAITokenizer
from taverna.engine.tokens.hf import ClaudeTokenizer
from taverna.engine.tokens.sentencepiece import MistralTokenizer, NemoTokenizer

# Vocabularies taverna has offline.
EXACT = ("cl100k_base", "o200k_base", "llama3", "mistral", "nemo")
# Exact when the optional `taverna[gemma]` package is installed, the estimate otherwise.
OPTIONAL = ("gemma3",)
# SillyTavern downloads these at run time and, offline, counts them with its Llama 3
# file (src/endpoints/tokenizers.js WebTokenizer fallback); taverna does the same.
LLAMA3_STAND_INS = ("qwen2", "command-r")
# SillyTavern families whose files no package ships (and OpenAI's legacy encodings):
# counted with SillyTavern's own estimate. `gemma` is Gemma 1 and 2 (256k vocabulary,
# SillyTavern's `gemma.model`), not Gemma 3's.
ESTIMATED = ("llama", "yi", "gemma", "jamba", "nerdstash", "nerdstash_v2", "gpt2", "p50k_base")
KNOWN = ("estimate", *EXACT, *OPTIONAL, "claude", *LLAMA3_STAND_INS, *ESTIMATED)


@dataclass(frozen=True, slots=True)
class StandIn:
    """Another family's tokenizer used in place of one that is not available."""

    name: str
    inner: Tokenizer
    exact: bool = False

    def count(self, text: str) -> int:
        """The stand-in's count of `text`."""
        return self.inner.count(text)


@cache
def get_tokenizer(name: str) -> Tokenizer:
    """The tokenizer called `name` (see `KNOWN`); unknown names get the estimate.

    Loaded vocabularies are kept for the life of the process: they are read-only.
    """
    if name in ("cl100k_base", "o200k_base"):
        return OpenAITokenizer(name)
    if name == "llama3":
        return Llama3Tokenizer()
    if name == "mistral":
        return MistralTokenizer()
    if name == "nemo":
        return NemoTokenizer()
    if name == "claude":
        return ClaudeTokenizer()
    if name == "gemma3" and gemma.available():
        return gemma.Gemma3Tokenizer()
    if name in LLAMA3_STAND_INS:
        return StandIn(name, Llama3Tokenizer())
    if name.startswith(llama_vocab.PREFIX) and llama_vocab.available():
        return llama_vocab.LlamaVocabTokenizer(name[len(llama_vocab.PREFIX) :])
    return EstimateTokenizer()


def tokenizer_label(name: str) -> str:
    """A tokenizer's name as a person may read it: a model's own vocabulary by its file's
    name, never by where the file sits on the server."""
    if name.startswith(llama_vocab.PREFIX):
        name = name[len(llama_vocab.PREFIX) :]
    return re.split(r"[\\/]", name)[-1]
