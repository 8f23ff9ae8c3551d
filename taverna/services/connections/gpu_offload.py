"""How many of a model's layers llama.cpp runs on a GPU: all when its build can offload, none otherwise.

A connection's `n_gpu_layers` option chooses otherwise (0: the CPU alone; -1: every
layer). Whether llama.cpp can offload is its build's own answer
(`llama_supports_gpu_offload`: a CUDA, Metal, Vulkan or ROCm build that sees a device);
asking it loads the library, so it is asked once per process.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from functools import cache
from typing import Any

ALL_LAYERS = -1


@cache
def supported() -> bool:
    """Whether the installed llama.cpp can run layers on a GPU here."""
    if importlib.util.find_spec("llama_cpp") is None:
        return False
    try:
        import llama_cpp

        return bool(llama_cpp.llama_supports_gpu_offload())
    except Exception:  # a build without the call, or a library that does not load
        return False


def layers(options: Mapping[str, Any]) -> int:
    """The layers a connection with `options` offloads: its own `n_gpu_layers` when set
    (a whole number, -1 for all), else all where a GPU can take them, else none."""
    chosen = options.get("n_gpu_layers")
    if isinstance(chosen, int) and not isinstance(chosen, bool) and chosen >= ALL_LAYERS:
        return chosen if supported() else 0
    return ALL_LAYERS if supported() else 0


def describe(options: Mapping[str, Any]) -> str:
    """Where the model runs, as a connection shows it: `gpu` (every layer), `gpu:N`, `cpu`."""
    count = layers(options)
    if count == 0:
        return "cpu"
    return "gpu" if count == ALL_LAYERS else f"gpu:{count}"
