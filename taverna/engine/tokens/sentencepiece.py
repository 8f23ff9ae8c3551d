"""Mistral's tokenizers read from the `mistral-common` package: SentencePiece v1 and Tekken."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

from taverna.engine.tokens.bpe import package_file


@cache
def _mistral_v1() -> Any:
    import sentencepiece

    path = package_file("mistral_common", "data/tokenizer.model.v1")
    return sentencepiece.SentencePieceProcessor(model_file=str(path))


@cache
def _tekken() -> Any:
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    return Tekkenizer.from_file(package_file("mistral_common", "data/tekken_240718.json"))


@dataclass(frozen=True, slots=True)
class MistralTokenizer:
    """Mistral 7B / Mixtral's SentencePiece tokenizer (SillyTavern's `mistral.model`)."""

    name: str = "mistral"
    exact: bool = True
    _processor: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_processor", _mistral_v1())

    def count(self, text: str) -> int:
        """The number of tokens of `text` (no beginning-of-sequence token)."""
        return len(self._processor.encode(text))


@dataclass(frozen=True, slots=True)
class NemoTokenizer:
    """Mistral Nemo's Tekken tokenizer (also Pixtral)."""

    name: str = "nemo"
    exact: bool = True
    _tekken: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_tekken", _tekken())

    def count(self, text: str) -> int:
        """The number of tokens of `text` (no beginning-of-sequence token)."""
        return len(self._tekken.encode(text, bos=False, eos=False))
