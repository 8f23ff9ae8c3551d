"""The preset's sampling fields under one set of names, whichever SillyTavern names they came with.

A Chat Completion preset file says `temperature`, its settings twin `temp_openai`, a Text
Completion preset `temp`; they all mean the same knob. `Sampling.from_preset` folds them
into one record that every request builder maps to its API's own names.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from taverna.errors import FormatError, raw_words

# canonical name -> the SillyTavern names that carry it, first match wins
_ALIASES: dict[str, tuple[str, ...]] = {
    "temperature": ("temperature", "temp_openai", "temp"),
    "top_p": ("top_p", "top_p_openai"),
    "top_k": ("top_k", "top_k_openai"),
    "top_a": ("top_a", "top_a_openai"),
    "min_p": ("min_p", "min_p_openai"),
    "typical_p": ("typical_p", "typical"),
    "tfs": ("tfs", "tfs_z"),
    "frequency_penalty": ("frequency_penalty", "freq_pen_openai", "freq_pen"),
    "presence_penalty": ("presence_penalty", "pres_pen_openai", "presence_pen"),
    "repetition_penalty": ("repetition_penalty", "repetition_penalty_openai", "rep_pen"),
    "repetition_penalty_range": ("rep_pen_range", "repetition_penalty_range"),
    "repetition_penalty_slope": ("rep_pen_slope",),
    "max_tokens": ("openai_max_tokens", "genamt", "amount_gen", "max_tokens", "max_new_tokens"),
    "max_context": ("openai_max_context", "max_length", "max_context", "truncation_length"),
    "seed": ("seed", "sampler_seed"),
    "n": ("n",),
    "stream": ("stream_openai", "streaming", "stream"),
    "logit_bias": ("logit_bias",),
    "mirostat_mode": ("mirostat_mode", "mirostat"),
    "mirostat_tau": ("mirostat_tau",),
    "mirostat_eta": ("mirostat_eta",),
    "dry_multiplier": ("dry_multiplier",),
    "dry_base": ("dry_base",),
    "dry_allowed_length": ("dry_allowed_length",),
    "dry_penalty_last_n": ("dry_penalty_last_n",),
    "dry_sequence_breakers": ("dry_sequence_breakers",),
    "xtc_threshold": ("xtc_threshold",),
    "xtc_probability": ("xtc_probability",),
    "sampler_order": ("sampler_order",),
    "reasoning_effort": ("reasoning_effort",),
}

# the value at which a sampler changes nothing, where it is not 0
_NEUTRAL = {"repetition_penalty": 1}

_NUMBERS = {
    "temperature",
    "top_p",
    "top_a",
    "min_p",
    "typical_p",
    "tfs",
    "frequency_penalty",
    "presence_penalty",
    "repetition_penalty",
    "repetition_penalty_slope",
    "mirostat_tau",
    "mirostat_eta",
    "dry_multiplier",
    "dry_base",
    "xtc_threshold",
    "xtc_probability",
}
_INTEGERS = {
    "top_k",
    "repetition_penalty_range",
    "max_tokens",
    "max_context",
    "seed",
    "n",
    "mirostat_mode",
    "dry_allowed_length",
    "dry_penalty_last_n",
}


@dataclass(frozen=True, slots=True)
class Sampling:
    """Sampling knobs by canonical name; `None` means the preset did not set it."""

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    top_a: float | None = None
    min_p: float | None = None
    typical_p: float | None = None
    tfs: float | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    repetition_penalty: float | None = None
    repetition_penalty_range: int | None = None
    repetition_penalty_slope: float | None = None
    max_tokens: int | None = None
    max_context: int | None = None
    seed: int | None = None
    n: int | None = None
    stream: bool | None = None
    logit_bias: Any = None
    mirostat_mode: int | None = None
    mirostat_tau: float | None = None
    mirostat_eta: float | None = None
    dry_multiplier: float | None = None
    dry_base: float | None = None
    dry_allowed_length: int | None = None
    dry_penalty_last_n: int | None = None
    dry_sequence_breakers: tuple[str, ...] | None = None
    xtc_threshold: float | None = None
    xtc_probability: float | None = None
    sampler_order: tuple[int, ...] | None = None
    reasoning_effort: str | None = None

    @classmethod
    def from_preset(cls, values: Mapping[str, Any]) -> Sampling:
        """Read SillyTavern-named sampling fields; a value of the wrong type is a FormatError."""
        found: dict[str, Any] = {}
        for name, aliases in _ALIASES.items():
            for alias in aliases:
                if alias in values and values[alias] is not None:
                    found[name] = _coerce(name, alias, values[alias])
                    break
        return cls(**found)

    def as_dict(self) -> dict[str, Any]:
        """The fields that are set, by canonical name."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                out[f.name] = value
        return out

    def moved(self, names: Iterable[str]) -> dict[str, Any]:
        """The fields among `names` moved off their neutral value (`_NEUTRAL`, else 0)."""
        values = self.as_dict()
        return {
            name: values[name]
            for name in names
            if name in values and values[name] != _NEUTRAL.get(name, 0)
        }

    def renamed(self, names: Iterable[tuple[str, str]]) -> dict[str, Any]:
        """The set fields among `names` (canonical name, the API's name), by the API's names."""
        values = self.as_dict()
        return {wire: values[name] for name, wire in names if name in values}


def _coerce(name: str, alias: str, value: Any) -> Any:
    """Check one value's type and bring it to the canonical form."""
    if name in _NUMBERS:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise FormatError(
                f"expected a number, got {value!r}",
                field=alias,
                code="expected_number_got",
                params={"value": str(value)},
            )
        return float(value)
    if name in _INTEGERS:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise FormatError(
                f"expected an integer, got {value!r}",
                field=alias,
                code="expected_integer_got",
                params={"value": str(value)},
            )
        return int(value)
    if name == "stream":
        return bool(value)
    if name == "dry_sequence_breakers":
        # a JSON-array string in SillyTavern's presets (formats-presets.md §5)
        if isinstance(value, str):
            text = value.strip()
            if not text:
                return ()
            try:
                value = json.loads(text if text.startswith("[") else f"[{text}]")
            except json.JSONDecodeError as exc:
                raise FormatError(
                    f"not a JSON array of strings: {exc}",
                    field=alias,
                    code="not_json_array_of_strings",
                    params=raw_words(exc),
                ) from None
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise FormatError(
                "expected a list of strings", field=alias, code="expected_list_of_strings"
            )
        return tuple(value)
    if name == "sampler_order":
        if not isinstance(value, list | tuple) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            raise FormatError(
                "expected a list of integers", field=alias, code="expected_list_of_integers"
            )
        return tuple(value)
    if name == "reasoning_effort":
        if not isinstance(value, str):
            raise FormatError("expected a string", field=alias, code="expected_string")
        return value
    return value
