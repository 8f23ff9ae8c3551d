"""SentencePiece and Tekken tokenizers: Mistral's from the `mistral-common` package, and
any model's own SentencePiece file supplied by the user."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

from taverna.engine.tokens.bpe import package_file
from taverna.errors import FormatError


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


@dataclass(frozen=True, slots=True)
class SentencePieceTokenizer:
    """A model's own SentencePiece `tokenizer.model` (Gemma, Llama 2, Yi...), given as bytes.

    No package ships these vocabularies; a user who has the model's file can count
    with it exactly. The caller reads the file (the engine does no I/O).
    """

    name: str
    processor: Any = field(repr=False, compare=False)
    exact: bool = True

    @classmethod
    def from_model_bytes(
        cls, name: str, data: bytes, file: str | None = None
    ) -> SentencePieceTokenizer:
        """A tokenizer from the bytes of a SentencePiece model file."""
        import sentencepiece

        try:
            processor = sentencepiece.SentencePieceProcessor(model_proto=data)
        except (RuntimeError, TypeError, OSError) as error:
            raise FormatError(
                f"not a SentencePiece model: {error}",
                file=file,
                field="tokenizer",
                code="not_sentencepiece_model",
                params={"error": str(error)},
            ) from error
        return cls(name, processor)

    def count(self, text: str) -> int:
        """The number of tokens of `text` (no beginning-of-sequence token)."""
        return len(self.processor.encode(text))
