"""Which prompt layout a connection's turns are assembled with (`engine.assembly.layouts`).

A connection names one in its options (`prompt_layout`); one that names none gets its
API's default: the cache-aware layout for the local model, whose process keeps the last
prompt's computed prefix, and SillyTavern's exact layout everywhere else. llama.cpp and
KoboldCpp servers keep the same cache, so their connections may choose `cache` too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taverna.engine.assembly.layouts import CACHE, SILLYTAVERN, PromptLayout, layout_named
from taverna.providers.request import Api

OPTION = "prompt_layout"

# An API's layout when its connection names none.
DEFAULT_LAYOUTS: Mapping[Api, PromptLayout] = {Api.LOCAL: CACHE}


def layout_for(api: Api, options: Mapping[str, Any]) -> PromptLayout:
    """The layout a connection of `api` with these options assembles its prompts with."""
    named = options.get(OPTION)
    if isinstance(named, str) and named.strip():
        return layout_named(named)
    return DEFAULT_LAYOUTS.get(api, SILLYTAVERN)
