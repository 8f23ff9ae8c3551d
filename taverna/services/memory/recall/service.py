"""The recall service: for one turn, the messages and vectorized lorebook entries to
recall, by the turn's question (the mean of its last messages' vectors).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import replace
from typing import Literal

import numpy as np

from taverna.model.chat import Node
from taverna.model.lorebook import Lorebook
from taverna.providers.embeddings import Embedder, normalised
from taverna.providers.outbound import OutboundPolicy
from taverna.services.connections.outbound_rules import OutboundRules
from taverna.services.library.watch import Kept, LibraryWatch
from taverna.services.memory.recall.caches import RecallCaches
from taverna.services.memory.recall.chat_vectors import ChatVectors
from taverna.services.memory.recall.config import RecallConfig, embedder_for, stored_config
from taverna.services.memory.recall.turn import TurnRecall
from taverna.services.memory.recall.vectors import Vectors, embedded_text, single_threaded, to_bytes
from taverna.services.memory.recall_keys import RecallKeys, operator_endpoint, same_endpoint
from taverna.services.memory.text_vectors import TextVectors
from taverna.store.repository import Store

# Chats whose account a send remembers (an account never changes), at most.
OWNERS_KEPT = 4096


class RecallService(RecallCaches):
    """Finds, for one turn, the messages and vectorized lorebook entries to recall."""

    def __init__(
        self,
        store: Store,
        embedder_for: Callable[[RecallConfig], Embedder] = embedder_for,
        *,
        bits: Literal["background", "at once", "never"] = "background",
        watch: LibraryWatch | None = None,
        keys: RecallKeys | None = None,
        outbound: OutboundRules | None = None,
    ) -> None:
        """`bits`: how a chat's sign bits come into memory beside the database's search
        (`ChatBits`): read on a thread of their own while the database searches (a
        100,000-message chat's take seconds), read at once, or never (the database
        searches every turn). `watch`: when what a send's early embedding keeps of the
        settings is read again (without one, they are read at every send). `keys`: the
        accounts' own keys for the endpoints they name (without it, none is sent).
        `outbound`: whose requests to the endpoints they name go out under the outbound
        policy (without it, nobody's)."""
        super().__init__(store, bits)
        self.keys = keys
        self.outbound = outbound
        # A send asks whether its account's recall is on: the answer is kept until the
        # library changes, with each chat's account (which never changes).
        self._enabled: Kept[str, RecallConfig] | None = Kept(watch) if watch else None
        self._owners: OrderedDict[str, str] = OrderedDict()
        self._embedder_for = embedder_for
        self._embedders: dict[tuple[str, str, str, str, OutboundPolicy | None], Embedder] = {}
        self.texts = TextVectors()  # texts' vectors made in this process (questions, sends)
        self._made = threading.Lock()

    def embedder(self, config: RecallConfig) -> Embedder:
        """The embedding model of the settings `config`, with the account's own key and
        policy for an endpoint it named (one made per model, key and policy)."""
        if config.source == "openai" and not same_endpoint(
            config.endpoint or operator_endpoint(), operator_endpoint()
        ):
            own_key = self.keys.key_for(config.owner, config.endpoint) if self.keys else ""
            policy = self.outbound.for_owner(config.owner) if self.outbound else None
            config = replace(config, key=own_key, policy=policy)
        own = hashlib.sha256(config.key.encode()).hexdigest() if config.key else ""
        key = (config.source, config.endpoint, config.model, own, config.policy)
        with self._made:  # one model each, whichever thread asks first
            found = self._embedders.get(key)
            if found is None:
                found = self._embedders[key] = self._embedder_for(config)
        return found

    def foresee(self, chat_id: str, speaker: str, text: str) -> Future[None] | None:
        """A message is being sent (or typed) in the chat: while recall is on, embed it now,
        on a thread of its own, so the turn's question finds its vector made. `speaker`
        empty: the chat's person."""
        if not text.strip():
            return None

        def named() -> tuple[Embedder, str] | None:
            config = self._config_of(chat_id)
            if not config.enabled:
                return None
            name = speaker or self.store.get_chat(chat_id).user_name
            return self.embedder(config), embedded_text(name, text)

        return self.texts.ahead(named)

    def _config_of(self, chat_id: str) -> RecallConfig:
        """The recall settings of the chat's account (kept while the library is unchanged)."""
        if self._enabled is None:
            return stored_config(self.store, self.store.get_chat(chat_id).owner)
        with self.lock:
            owner = self._owners.get(chat_id)
        if owner is None:
            owner = self.store.get_chat(chat_id).owner
            with self.lock:
                self._owners[chat_id] = owner
                while len(self._owners) > OWNERS_KEPT:
                    self._owners.popitem(last=False)
        return self._enabled.get(owner, lambda: stored_config(self.store, owner))

    def close(self) -> None:
        self.texts.close()

    def _text_vector(self, embedder: Embedder, text: str) -> Vectors:
        return self.texts.vector(embedder, text)

    # ------------------------------------------------------------------- a turn

    def query_vector(
        self, config: RecallConfig, vectors: ChatVectors | None, recent: Sequence[Node]
    ) -> Vectors | None:
        """The mean of the last `query` non-empty visible messages' vectors (those not yet
        embedded are embedded now, kept in memory only). `vectors` None: the stored
        vectors are read from the store."""
        embedder = self.embedder(config)
        picked = [
            n for n in reversed(recent) if not n.hidden and not n.deleted and n.content.strip()
        ]
        picked = picked[: config.query]
        if not picked:
            return None
        saved: dict[str, bytes] = {}
        if vectors is None:
            saved = self.store.node_vectors(embedder.model, [n.id for n in picked])
        rows = []
        for node in picked:
            if vectors is None:
                raw = saved.get(node.id)
                stored = None if raw is None else np.frombuffer(raw, dtype=np.float32)
            else:
                stored = vectors.vector(node.id)
            if stored is None:
                stored = self._text_vector(embedder, embedded_text(node.speaker, node.content))
            rows.append(stored)
        mean = np.mean(np.vstack(rows), axis=0)
        query: Vectors = normalised(mean)[0]
        return query

    def for_turn(
        self,
        config: RecallConfig,
        chat_id: str,
        leaf: str | None,
        recent: Sequence[Node],
        books: Mapping[str, Lorebook] = {},
    ) -> TurnRecall | None:
        """What this turn may recall; None when recall is off or there is nothing to ask."""
        if not config.enabled or not recent:
            return None
        with self.lock, single_threaded():
            embedder = self.embedder(config)
            in_store = bool(self.store.vector_search())
            vectors = None if in_store else self.chat_vectors(chat_id, embedder.model)
            bits = (
                self.chat_bits(chat_id, embedder.model)
                if in_store and config.enabled_chats
                else None
            )
            query = self.query_vector(config, vectors, recent)
            if query is None:
                return None
            parents = {n.id: n.parent_id for n in recent}
            path = self.path(chat_id, leaf, parents) if config.enabled_chats else None
            entries = (
                self._entry_scores(config, embedder, query, books)
                if config.enabled_world_info and books
                else {}
            )
        return TurnRecall(
            self,
            config,
            chat_id,
            leaf,
            embedder.model,
            vectors,
            path,
            query,
            entries,
            parents,
            bits,
        )

    def _entry_scores(
        self,
        config: RecallConfig,
        embedder: Embedder,
        query: Vectors,
        books: Mapping[str, Lorebook],
    ) -> dict[tuple[str, int], float]:
        refs: list[tuple[str, int]] = []
        texts: list[str] = []
        for name, book in books.items():
            for entry in book.entries:
                if entry.vectorized and not entry.disable and entry.content.strip():
                    refs.append((name, entry.uid))
                    texts.append(entry.content)
        if not refs or config.max_entries <= 0:
            return {}
        hashes = [hashlib.sha256(text.encode()).hexdigest() for text in texts]
        stored = self.store.text_vectors(embedder.model, hashes)
        missing = sorted(
            {h: t for h, t in zip(hashes, texts, strict=True) if h not in stored}.items()
        )
        if missing:
            made = embedder.embed([t for _, t in missing])
            fresh = {h: to_bytes(made[i]) for i, (h, _) in enumerate(missing)}
            self.store.save_text_vectors(embedder.model, fresh)
            stored.update(fresh)
        matrix = np.vstack([np.frombuffer(stored[h], dtype=np.float32) for h in hashes])
        scores = matrix @ query
        order = np.argsort(-scores, kind="stable")
        out: dict[tuple[str, int], float] = {}
        for row in order[: config.max_entries]:
            score = float(scores[row])
            if score >= config.score_threshold:
                out[refs[row]] = score
        return out
