"""Texts' vectors kept in memory by model and text, each made once whoever asks first.

A turn's question is made of the chat's last messages; the newest is usually the one
being sent, not yet stored, so no stored vector has it. `ahead` starts embedding such a
text on a thread of its own as soon as it is known (when the message is sent, or while
it is typed), so the prompt's build finds it made, or waits only for the rest of it.
A regenerate or a swipe asks for the same texts again and finds them here; the
embedding backlog takes a stored message's vector from here instead of embedding its
text a second time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import numpy.typing as npt

from taverna.providers.embeddings import Embedder
from taverna.services.kept_bytes import KeptBytes, text_bytes

Vectors = npt.NDArray[np.float32]

# The bytes of the texts and vectors kept (a vector of 512 floats is 2 KB; a text of a
# few sentences half a KB): about 1,500 short messages.
KEPT_BYTES = 4 << 20
# A future and its key's tuple, and a vector not made yet (512 floats).
FUTURE_BYTES = 400
VECTOR_BYTES = 2048


def _held(key: tuple[str, str], found: Future[Vectors]) -> int:
    """About what one text's entry holds: its text, its vector, the future holding it."""
    vector = VECTOR_BYTES
    if found.done() and found.exception() is None:
        vector = found.result().nbytes
    return text_bytes(key) + FUTURE_BYTES + vector


class TextVectors:
    """Vectors by (model, text): made, or being made, once."""

    def __init__(self, kept: int = KEPT_BYTES) -> None:
        self.made = 0  # texts embedded here (for tests and benchmarks)
        self._found: KeptBytes[tuple[str, str], Future[Vectors]] = KeptBytes(kept, _held)
        self._lock = threading.Lock()
        self._ahead: ThreadPoolExecutor | None = None

    def get(self, model: str, text: str) -> Vectors | None:
        """The text's vector if it is made (never waits)."""
        with self._lock:
            found = self._found.get((model, text))
        if found is None or not found.done() or found.exception() is not None:
            return None
        return found.result()

    def vector(self, embedder: Embedder, text: str) -> Vectors:
        """The text's vector: kept, being made (waited for), or made now."""
        found, mine = self._claim(embedder.model, text)
        if mine:
            self._make(found, embedder, text)
        return found.result()

    def ahead(self, embedder: Callable[[], tuple[Embedder, str] | None]) -> Future[None]:
        """Make a text's vector on the thread of texts ahead. `embedder` (called there)
        names the model and the text, or None when there is nothing to make. The future
        is done when the vector is (or nothing was to be made)."""
        with self._lock:
            if self._ahead is None:
                self._ahead = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed-ahead")
            pool = self._ahead
        return pool.submit(self._make_ahead, embedder)

    def close(self) -> None:
        with self._lock:
            pool, self._ahead = self._ahead, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def _make_ahead(self, embedder: Callable[[], tuple[Embedder, str] | None]) -> None:
        try:
            named = embedder()
        except Exception:  # the chat went, the settings are unreadable: the turn will say
            return
        if named is None:
            return
        model, text = named
        found, mine = self._claim(model.model, text)
        if mine:
            self._make(found, model, text)

    def _claim(self, model: str, text: str) -> tuple[Future[Vectors], bool]:
        """The text's future, and whether the caller is to make it."""
        key = (model, text)
        with self._lock:
            found = self._found.get(key)
            if found is not None and not (found.done() and found.exception() is not None):
                return found, False
            return self._found.put(key, Future()), True

    def _make(self, found: Future[Vectors], embedder: Embedder, text: str) -> None:
        try:
            vector = embedder.embed([text])[0]
        except BaseException as exc:
            found.set_exception(exc)
            return
        self.made += 1
        found.set_result(vector)
        with self._lock:  # measured again with its vector's own size
            self._found.touch((embedder.model, text))
