"""Instruction-tuned models worth a download, chosen by this machine's memory and cores.

Each is a GGUF file at 4-bit (Q4_K_M: the usual balance of size and quality) in a public
repository of the hub, with its licence. A model fits when the machine's memory holds its
file, its context cache and the rest of the machine's work (twice the file and 1 GiB);
of those that fit, the suggested one is the largest that still answers at a pace one
can read on these cores (about 1.7B parameters on 2–3 cores, 3B on 4–7, any above).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

GIB = 1 << 30


@dataclass(frozen=True, slots=True)
class Recommendation:
    """One model to offer: where its GGUF file is, how big it is, under what licence."""

    name: str
    repo: str
    file: str
    size: int  # bytes of the file, about
    parameters: float  # billions
    licence: str
    licence_url: str

    def memory_needed(self) -> int:
        """The memory the machine should have to run it beside everything else."""
        return 2 * self.size + GIB


_MB = 1 << 20

CATALOGUE: tuple[Recommendation, ...] = (
    Recommendation(
        "SmolLM2-360M-Instruct",
        "bartowski/SmolLM2-360M-Instruct-GGUF",
        "SmolLM2-360M-Instruct-Q4_K_M.gguf",
        271 * _MB,
        0.36,
        "Apache-2.0",
        "https://www.apache.org/licenses/LICENSE-2.0",
    ),
    Recommendation(
        "Qwen2.5-0.5B-Instruct",
        "Qwen/Qwen2.5-0.5B-Instruct-GGUF",
        "qwen2.5-0.5b-instruct-q4_k_m.gguf",
        491 * _MB,
        0.5,
        "Apache-2.0",
        "https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/blob/main/LICENSE",
    ),
    Recommendation(
        "Llama-3.2-1B-Instruct",
        "bartowski/Llama-3.2-1B-Instruct-GGUF",
        "Llama-3.2-1B-Instruct-Q4_K_M.gguf",
        808 * _MB,
        1.2,
        "Llama 3.2 Community License",
        "https://huggingface.co/meta-llama/Llama-3.2-1B-Instruct/blob/main/LICENSE.txt",
    ),
    Recommendation(
        "Qwen2.5-1.5B-Instruct",
        "Qwen/Qwen2.5-1.5B-Instruct-GGUF",
        "qwen2.5-1.5b-instruct-q4_k_m.gguf",
        1117 * _MB,
        1.5,
        "Apache-2.0",
        "https://huggingface.co/Qwen/Qwen2.5-1.5B-Instruct/blob/main/LICENSE",
    ),
    Recommendation(
        "SmolLM2-1.7B-Instruct",
        "bartowski/SmolLM2-1.7B-Instruct-GGUF",
        "SmolLM2-1.7B-Instruct-Q4_K_M.gguf",
        1056 * _MB,
        1.7,
        "Apache-2.0",
        "https://www.apache.org/licenses/LICENSE-2.0",
    ),
    Recommendation(
        "gemma-2-2b-it",
        "bartowski/gemma-2-2b-it-GGUF",
        "gemma-2-2b-it-Q4_K_M.gguf",
        1709 * _MB,
        2.6,
        "Gemma Terms of Use",
        "https://ai.google.dev/gemma/terms",
    ),
    Recommendation(
        "Llama-3.2-3B-Instruct",
        "bartowski/Llama-3.2-3B-Instruct-GGUF",
        "Llama-3.2-3B-Instruct-Q4_K_M.gguf",
        2019 * _MB,
        3.2,
        "Llama 3.2 Community License",
        "https://huggingface.co/meta-llama/Llama-3.2-3B-Instruct/blob/main/LICENSE.txt",
    ),
    Recommendation(
        "Qwen2.5-3B-Instruct",
        "Qwen/Qwen2.5-3B-Instruct-GGUF",
        "qwen2.5-3b-instruct-q4_k_m.gguf",
        2104 * _MB,
        3.1,
        "Qwen Research License (non-commercial)",
        "https://huggingface.co/Qwen/Qwen2.5-3B-Instruct/blob/main/LICENSE",
    ),
)


@dataclass(frozen=True, slots=True)
class Machine:
    """What decides which models suit: memory in all, cores, a GPU llama.cpp can use."""

    memory: int
    cores: int
    gpu: bool = False

    def pace_limit(self) -> float:
        """The most parameters (billions) that answer at a readable pace here."""
        if self.gpu or self.cores >= 8:
            return 100.0
        return 3.2 if self.cores >= 4 else 1.7


def this_machine(*, gpu: bool = False) -> Machine:
    """This machine's memory and cores (the cores this process may use)."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        memory = 0
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return Machine(memory, cores, gpu)


def recommended(machine: Machine) -> list[dict[str, Any]]:
    """The catalogue for `machine`: each model with whether it fits and which is suggested."""
    fits = [r for r in CATALOGUE if not machine.memory or r.memory_needed() <= machine.memory]
    paced = [r for r in fits if r.parameters <= machine.pace_limit()]
    suggested = max(paced or fits[:1], key=lambda r: r.parameters, default=None)
    return [
        {
            "name": r.name,
            "repo": r.repo,
            "file": r.file,
            "size": r.size,
            "parameters": r.parameters,
            "licence": r.licence,
            "licence_url": r.licence_url,
            "memory_needed": r.memory_needed(),
            "fits": r in fits,
            "suggested": r == suggested,
        }
        for r in CATALOGUE
    ]
