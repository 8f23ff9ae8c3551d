"""The chats recall searches, kept in memory for the most recently used: their vectors
(`ChatVectors`), their sign bits (`ChatBits`, read on a thread of their own) and their
paths (`PathIndex`).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Literal

from taverna.services.memory.recall.chat_vectors import ChatBits, ChatVectors
from taverna.services.memory.recall.path_index import PathIndex
from taverna.services.memory.recall.vectors import single_threaded
from taverna.store.repository import Store

log = logging.getLogger(__name__)

# A chat's vectors kept in memory, for this many chats (the most recently used).
CHATS_KEPT = 4


class RecallCaches:
    """The per-chat caches a recall service searches (shared by the server's threads)."""

    def __init__(
        self, store: Store, bits: Literal["background", "at once", "never"] = "background"
    ) -> None:
        self.store = store
        self._chats: OrderedDict[tuple[str, str], ChatVectors] = OrderedDict()
        self.bits_mode = bits
        self._bits: OrderedDict[tuple[str, str], ChatBits] = OrderedDict()
        self._loading: set[tuple[str, str]] = set()
        self._paths: OrderedDict[str, PathIndex] = OrderedDict()
        self.lock = threading.RLock()  # the caches are shared by the server's threads

    def chat_vectors(self, chat_id: str, model: str) -> ChatVectors:
        key = (chat_id, model)
        found = self._chats.get(key)
        if found is None:
            found = self._chats[key] = ChatVectors(chat_id, model)
            while len(self._chats) > CHATS_KEPT:
                self._chats.popitem(last=False)
        self._chats.move_to_end(key)
        found.refresh(self.store)
        return found

    def chat_bits(self, chat_id: str, model: str) -> ChatBits | None:
        """The chat's sign bits, up to date, if they are in memory (else, in the
        background mode, their read is started and the database searches meanwhile)."""
        key = (chat_id, model)
        with self.lock:
            found = self._bits.get(key)
            if found is not None:
                self._bits.move_to_end(key)
                found.refresh(self.store)
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
        self._bits[key] = bits
        while len(self._bits) > CHATS_KEPT:
            self._bits.popitem(last=False)
        return bits

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
            found = self._paths[chat_id] = PathIndex(chat_id)
            while len(self._paths) > CHATS_KEPT:
                self._paths.popitem(last=False)
        self._paths.move_to_end(chat_id)
        found.follow(self.store, leaf, parents)
        return found
