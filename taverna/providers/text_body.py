"""The body of a Text Completion request, one builder for every API that takes a prompt text.

KoboldCpp, llama.cpp's server and OpenAI-style `/completions` ask for the same things (the
prompt, the reply's length, the samplers, the stop strings, a seed), each under its own
field names and in its own order. A `TextBody` states those differences as data: the
parts of the body in the API's order, the names of its fields, and the fields it always
sends. A part an API alone has is a small function of its own module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from taverna.model.prompt import Prompt
from taverna.providers.request import RequestOptions
from taverna.providers.sampling import Sampling


@dataclass(frozen=True, slots=True)
class Draft:
    """What a part of the body is made from: the prompt, the options, the preset's
    samplers under their canonical names, and the API's spelling."""

    prompt: Prompt
    options: RequestOptions
    sampling: Sampling
    spelling: TextBody


# One part of a body: the fields it adds, in the order the API's body has them.
Part = Callable[[Draft], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class TextBody:
    """How one Text Completion API spells its request body.

    `layout`: the parts in the order they stand in the body. `max_tokens`, `stop`, `seed`:
    the API's names of the reply's length, the stop strings and the seed. `samplers`:
    canonical sampling name -> the API's field, each sent when the preset sets it.
    `negative_seed`: whether a seed below 0 (SillyTavern's "random") is sent as it is.
    `fixed`: fields every body ends with.
    """

    layout: tuple[Part, ...]
    max_tokens: str = "max_tokens"
    stop: str = "stop"
    seed: str = "seed"
    samplers: tuple[tuple[str, str], ...] = ()
    negative_seed: bool = False
    fixed: Mapping[str, Any] = field(default_factory=dict)

    def build(self, prompt: Prompt, options: RequestOptions) -> dict[str, Any]:
        """The JSON body for `prompt` (pure)."""
        draft = Draft(prompt, options, Sampling.from_preset(prompt.sampling), self)
        body: dict[str, Any] = {}
        for part in self.layout:
            body.update(part(draft))
        body.update(self.fixed)
        return body


def model(draft: Draft) -> dict[str, Any]:
    """The model the connection names."""
    return {"model": draft.options.model}


def prompt_text(draft: Draft) -> dict[str, Any]:
    """The prompt itself."""
    return {"prompt": draft.prompt.text}


def max_tokens(draft: Draft) -> dict[str, Any]:
    """The reply's length, when the preset sets it."""
    length = draft.sampling.max_tokens
    return {} if length is None else {draft.spelling.max_tokens: length}


def stream(draft: Draft) -> dict[str, Any]:
    """Whether the answer comes as a stream."""
    return {"stream": draft.options.stream}


def stop(draft: Draft) -> dict[str, Any]:
    """Every stop string of the prompt, an empty list included."""
    return {draft.spelling.stop: list(draft.prompt.stop)}


def samplers(draft: Draft) -> dict[str, Any]:
    """The samplers the preset sets, by the API's names."""
    return draft.sampling.renamed(draft.spelling.samplers)


def dry_sequence_breakers(draft: Draft) -> dict[str, Any]:
    """The strings DRY does not penalise across, when the preset names them."""
    breakers = draft.sampling.dry_sequence_breakers
    return {} if breakers is None else {"dry_sequence_breakers": list(breakers)}


def sampler_order(draft: Draft) -> dict[str, Any]:
    """The order the samplers run in, when the preset gives one."""
    order = draft.sampling.sampler_order
    return {} if order is None else {"sampler_order": list(order)}


def seed(draft: Draft) -> dict[str, Any]:
    """The seed, when the preset sets one the API takes."""
    value = draft.sampling.seed
    if value is None or (value < 0 and not draft.spelling.negative_seed):
        return {}
    return {draft.spelling.seed: value}
