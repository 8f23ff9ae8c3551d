"""A message's vector as recall stores it: the text embedded for a message, its bytes, and
numpy's products on one thread.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

import numpy as np
import numpy.typing as npt
from threadpoolctl import ThreadpoolController

Vectors = npt.NDArray[np.float32]

_BLAS: list[ThreadpoolController] = []  # made on first use (it looks at loaded libraries)


def single_threaded() -> AbstractContextManager[object]:
    """BLAS on one thread for a while (numpy's vector products).

    Its idle worker threads otherwise spin after every product, and on a machine of a few
    cores they take the CPU from the rest of the turn: on two cores a turn with recall
    took five times as long. The search's products are small; one thread does them best.
    """
    if not _BLAS:
        _BLAS.append(ThreadpoolController())
    limited: AbstractContextManager[object] = _BLAS[0].limit(limits=1, user_api="blas")
    return limited


def embedded_text(speaker: str, text: str) -> str:
    """What is embedded for one message: its text with the speaker's name."""
    return f"{speaker}: {text}" if speaker else text


def to_bytes(vector: Vectors) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()
