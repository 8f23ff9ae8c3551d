"""A logit-bias preset's entries as the token ids the model's tokenizer gives them.

SillyTavern sends the selected bias preset (`oai_settings.bias_presets`, a list of
`{text, value}`) to its server, which answers token id -> value for the tokenizer of
the Chat Completion model (its `/bias` route): a text written as a JSON list of numbers
is taken as raw token ids, any other text is encoded as it is (no space is added), and
every token of it gets the entry's value. An entry without text is skipped, and so is
one the encoder refuses (OpenAI's encoder refuses special-token text such as
`<|endoftext|>`). Claude gets no bias; nor do families whose vocabulary the encoder
cannot load (SillyTavern's Llama 3, Qwen 2, Command R and Nemo keys fall through to
OpenAI's encoder lookup, which knows no such model), and here also the SentencePiece
families whose files taverna does not ship (Llama 1/2, Yi, Gemma, Jamba, NerdStash).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from taverna.engine.tokens.bpe import _openai_encoding
from taverna.engine.tokens.sentencepiece import _mistral_v1

# SillyTavern sends a bias only to these Chat Completion sources.
BIAS_SOURCES = frozenset({"openai", "openrouter", "scale", "custom"})
# The largest array index of a JavaScript object: integer keys up to it come out sorted.
_MAX_INDEX = 2**32 - 2


def _encoder(family: str) -> Callable[[str], list[int]] | None:
    """The encoder SillyTavern's `/bias` route uses for a tokenizer family, if taverna has it."""
    if family in ("cl100k_base", "o200k_base"):
        encoding = _openai_encoding(family)
        special = encoding.special_tokens_set

        def tiktoken_ids(text: str) -> list[int]:
            if any(token in text for token in special):
                raise ValueError("special token text")
            return list(encoding.encode(text, disallowed_special=()))

        return tiktoken_ids
    if family == "mistral":
        processor = _mistral_v1()
        return lambda text: list(processor.encode(text))
    return None


def _raw_ids(text: str) -> list[int] | None:
    """`[12, 345]`: the token ids themselves (as a Uint32Array holds them)."""
    stripped = text.strip()
    if not (stripped.startswith("[") and stripped.endswith("]")):
        return None
    try:
        parsed = json.loads(stripped)
    except ValueError:
        return None
    if not isinstance(parsed, list) or not all(
        isinstance(x, int | float) and not isinstance(x, bool) for x in parsed
    ):
        return None
    out = []
    for number in parsed:
        if number != number or number in (float("inf"), float("-inf")):
            out.append(0)
        else:
            out.append(int(number) % 2**32)
    return out


def logit_bias(entries: Sequence[Any], family: str) -> dict[str, Any]:
    """Token id (as text) -> value for `entries` under the tokenizer `family`.

    Keys come out in JavaScript's order for an object: integer keys ascending.
    """
    encode = _encoder(family)
    if encode is None:
        return {}
    found: dict[int, Any] = {}
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        text = entry.get("text")
        if not text or not isinstance(text, str):
            continue  # no text; or one SillyTavern's route fails on (it calls `text.trim()`)
        value = entry.get("value")
        ids = _raw_ids(text)
        if ids is None:
            try:
                ids = encode(text)
            except (ValueError, TypeError):
                continue
        for token in ids:
            found[token] = value
    indexed = sorted(t for t in found if t <= _MAX_INDEX)
    rest = [t for t in found if t > _MAX_INDEX]
    return {str(t): found[t] for t in (*indexed, *rest)}
