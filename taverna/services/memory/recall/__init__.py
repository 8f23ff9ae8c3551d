"""Recall by meaning: every message embedded once, old messages of the path found again.

- **Embedding.** A message is embedded once per model ("speaker: text") by a backlog
  that reads, from the store, the messages with no vector of their current text. The
  backlog is the store's own state, so a crash loses nothing: the next start embeds what
  was not saved. `EmbeddingBacklog` runs it on a thread of its own.
- **Search.** Each turn the last `query` messages' vectors, averaged, are the query. The
  database searches where it can (sqlite-vec, pgvector: `Store.nearest_messages`), for a
  shortlist above the turn's window, made longer while too few of it qualify; nothing
  of the chat is loaded. Once a chat's sign bits are in memory (`ChatBits`, read on a
  thread of their own from the bits stored beside each vector), that shortlist is made
  from them instead, and only its floats are read. Without such a search the chat's vectors are held in memory per
  process (`ChatVectors`, reading only rows added since) and searched exactly. A hit
  counts only when it is on the active path (its depth's node on the path is itself:
  `PathIndex`), above the turn's window, and neither hidden nor deleted as stored now.
  So a branch never recalls a sibling's messages.
- **The question** needs the model only for a message not embedded yet, usually the one
  being sent: `foresee` starts embedding it when the send arrives (`TextVectors`).
- **Lorebook entries marked vectorized** are embedded once per text (stored by hash) and
  activate when near the same query, up to `max_entries`, above `score_threshold`.

Settings are SillyTavern's `extension_settings.vectors` (its names), plus `budget`, the
recalled block's own token limit.

Its parts: `config` (the settings and their model), `backlog` (the embedding worker),
`chat_vectors`, `message_ids` and `path_index` (what a chat's search holds in memory),
`caches` (the chats kept, up to a budget of bytes), `service` (a turn's question) and `turn` (a turn's search). This module is
its public face: what the other domains use.
"""

from taverna.services.memory.recall.backlog import EmbeddingBacklog, EmbeddingPlan, accounts_plan
from taverna.services.memory.recall.config import RecallConfig, recall_config, stored_config
from taverna.services.memory.recall.service import RecallService
from taverna.services.memory.recall.turn import TurnRecall

__all__ = [
    "EmbeddingBacklog",
    "EmbeddingPlan",
    "RecallConfig",
    "RecallService",
    "TurnRecall",
    "accounts_plan",
    "recall_config",
    "stored_config",
]
