"""A GGUF model's own vocabulary, counted by llama.cpp (the `local` extra's runtime).

A model run here is counted with the very tokenizer that will read the prompt: llama.cpp
loads only the file's vocabulary (`vocab_only`, no weights: a fraction of a second and a
few megabytes) and splits the text as the model will. Without the runtime, SillyTavern's
estimate counts instead.
"""

from __future__ import annotations

import atexit
import importlib.util
import threading
from dataclasses import dataclass, field
from typing import Any

PREFIX = "gguf-vocab:"


def available() -> bool:
    """Whether llama.cpp's Python binding is installed (nothing is imported)."""
    return importlib.util.find_spec("llama_cpp") is not None


@dataclass(slots=True)
class LlamaVocabTokenizer:
    """Counts with the vocabulary of the GGUF file at `path`; special tokens written in
    the text (`<|im_start|>`) count as the single tokens the model reads them as."""

    path: str
    name: str = ""
    exact: bool = True
    _model: Any = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.name = PREFIX + self.path

    def _vocab(self) -> Any:
        with self._lock:
            if self._model is None:
                from llama_cpp import Llama

                self._model = Llama(model_path=self.path, vocab_only=True, verbose=False)
                # freed while llama.cpp is still loaded, not during the interpreter's teardown
                atexit.register(self._model.close)
            return self._model

    def tokens(self, text: str) -> list[int]:
        """The model's token ids of `text` (no start-of-text token added)."""
        if not text:
            return []
        model = self._vocab()
        return list(model.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def count(self, text: str) -> int:
        """How many tokens the model reads `text` as."""
        return len(self.tokens(text))
