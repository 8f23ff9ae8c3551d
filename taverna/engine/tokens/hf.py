"""Tokenizers in Hugging Face's `tokenizer.json` format: Claude's, and any model's own file."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from importlib import resources

from tokenizers import Tokenizer as HFTokenizerModel

from taverna.errors import FormatError


@cache
def _claude() -> HFTokenizerModel:
    data = resources.files("taverna.engine.tokens").joinpath("data/claude.json").read_text("utf-8")
    return HFTokenizerModel.from_str(data)


@dataclass(frozen=True, slots=True)
class ClaudeTokenizer:
    """The Claude tokenizer Anthropic published with its SDK, the one SillyTavern uses.

    Claude 3 and later use a different, unpublished vocabulary; this one is the best
    available offline, so `exact` is false.
    """

    name: str = "claude"
    exact: bool = False
    _model: HFTokenizerModel = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_model", _claude())

    def count(self, text: str) -> int:
        """The number of tokens of `text`."""
        return len(self._model.encode(text, add_special_tokens=False).ids)


@dataclass(frozen=True, slots=True)
class HFTokenizer:
    """A model's own `tokenizer.json` (for example Gemma's), given as its text.

    The caller reads the file (the engine does no I/O); nothing is downloaded.
    """

    name: str
    model: HFTokenizerModel = field(repr=False, compare=False)
    exact: bool = True

    @classmethod
    def from_json(cls, name: str, text: str, file: str | None = None) -> HFTokenizer:
        """A tokenizer from the text of a `tokenizer.json` file."""
        try:
            model = HFTokenizerModel.from_str(text)
        except Exception as error:  # the Rust parser raises plain Exceptions
            raise FormatError(
                f"not a Hugging Face tokenizer.json: {error}",
                file=file,
                field="tokenizer",
                code="not_hugging_face_tokenizer_json",
                params={"error": str(error)},
            ) from error
        return cls(name, model)

    def count(self, text: str) -> int:
        """The number of tokens of `text`, without the model's added special tokens."""
        return len(self.model.encode(text, add_special_tokens=False).ids)
