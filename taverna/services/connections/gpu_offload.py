"""How many of a model's layers llama.cpp runs on a GPU: all when its build can offload, none otherwise.

A connection's `n_gpu_layers` option chooses otherwise (0: the CPU alone; -1: every
layer). Whether llama.cpp can offload is its build's own answer
(`llama_supports_gpu_offload`: a CUDA, Metal, Vulkan or ROCm build that sees a device),
asked once per process.
"""

from __future__ import annotations

import ctypes
import importlib.util
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

ALL_LAYERS = -1
_LIBRARIES = ("libllama.so", "libllama.dylib", "llama.dll")


@cache
def supported() -> bool:
    """Whether the installed llama.cpp can run layers on a GPU here. Its library is asked
    directly (a twentieth of a second), not through its Python package (seconds to import)."""
    spec = importlib.util.find_spec("llama_cpp")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found = [Path(folder) / "lib" / name for name in _LIBRARIES]
        library = next((path for path in found if path.is_file()), None)
        if library is None:
            continue
        try:
            llama = ctypes.CDLL(str(library))
            llama.llama_supports_gpu_offload.restype = ctypes.c_bool
            return bool(llama.llama_supports_gpu_offload())
        except (OSError, AttributeError):  # a library that does not load, or lacks the call
            return False
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
