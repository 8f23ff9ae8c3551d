"""The chats recall searches, kept in memory for the most recently used up to a budget of
bytes each: their vectors (`ChatVectors`), their sign bits (`ChatBits`, read on a thread
of their own) and their paths (`PathIndex`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Literal

from taverna.services.kept_bytes import KeptBytes
from taverna.services.memory.recall.chat_vectors import ChatBits, ChatVectors
from taverna.services.memory.recall.path_index import PathIndex
from taverna.services.memory.recall.vectors import single_threaded
from taverna.store.repository import Store

log = logging.getLogger(__name__)

# The bytes kept of the chats most recently used, each kind: their vectors (2 KB a
# message of 512 dimensions: 16,000 messages), their sign bits (about 200 bytes a message
# with its id: 80,000 messages) and their paths (about 100 bytes a message). The chat in
# use is kept whatever its size.
VECTORS_BYTES = 32 << 20
BITS_BYTES = 16 << 20
PATHS_BYTES = 4 << 20


def _nbytes(_key: object, value: ChatVectors | ChatBits | PathIndex) -> int:
    return value.nbytes


class RecallCaches:
    """The per-chat caches a recall service searches (shared by the server's threads)."""

    def __init__(
        self, store: Store, bits: Literal["background", "at once", "never"] = "background"
    ) -> None:
        self.store = store
        self._chats: KeptBytes[tuple[str, str], ChatVectors] = KeptBytes(VECTORS_BYTES, _nbytes)
        self.bits_mode = bits
        self._bits: KeptBytes[tuple[str, str], ChatBits] = KeptBytes(BITS_BYTES, _nbytes)
        self._loading: set[tuple[str, str]] = set()
        self._paths: KeptBytes[str, PathIndex] = KeptBytes(PATHS_BYTES, _nbytes)
        self.lock = threading.RLock()  # the caches are shared by the server's threads

    def chat_vectors(self, chat_id: str, model: str) -> ChatVectors:
        key = (chat_id, model)
        found = self._chats.get(key)
        if found is None:
            found = self._chats.put(key, ChatVectors(chat_id, model))
        found.refresh(self.store)
        self._chats.touch(key)
        return found

    def chat_bits(self, chat_id: str, model: str) -> ChatBits | None:
        """The chat's sign bits, up to date, if they are in memory (else, in the
        background mode, their read is started and the database searches meanwhile)."""
        key = (chat_id, model)
        with self.lock:
            found = self._bits.get(key)
            if found is not None:
                found.refresh(self.store)
                self._bits.touch(key)
                return found
            if self.bits_mode == "never":
                return None
            if self.bits_mode == "at once":
                return self._keep_bits(key, self._read_bits(chat_id, model))
            if key not in self._loading:
                self._loading.add(key)
                threading.Thread(
                    target=self._load_bits, args=key, name="recall-bits", daemon=True
                ).start()
        return None

    def _read_bits(self, chat_id: str, model: str) -> ChatBits:
        bits = ChatBits(chat_id, model)
        with single_threaded():
            bits.refresh(self.store)
        return bits

    def _keep_bits(self, key: tuple[str, str], bits: ChatBits) -> ChatBits:
        return self._bits.put(key, bits)

    def _load_bits(self, chat_id: str, model: str) -> None:
        key = (chat_id, model)
        try:
            bits = self._read_bits(chat_id, model)  # outside the lock: turns go on meanwhile
            with self.lock:
                self._keep_bits(key, bits)
        except Exception:  # the store closed, the chat gone: the database searches
            log.debug("reading the sign bits of chat %s failed", chat_id, exc_info=True)
        finally:
            with self.lock:
                self._loading.discard(key)

    def path(
        self, chat_id: str, leaf: str | None, parents: Mapping[str, str | None] = {}
    ) -> PathIndex:
        found = self._paths.get(chat_id)
        if found is None:
            found = self._paths.put(chat_id, PathIndex(chat_id))
        found.follow(self.store, leaf, parents)
        self._paths.touch(chat_id)
        return found
